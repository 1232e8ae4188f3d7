import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A vitest-style log of `lines` lines with one failure (line 50): the large output many e2e runs `cat`. */
export function testLog(n: number, lines = 200): string {
  const out = Array.from({ length: lines }, (_, i) =>
    i === 50 ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i}` : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${out.join("\n")}\n`;
}

/** A fresh temp dir holding `log0.txt` … `log<count - 1>.txt`, each the `testLog` of its number. */
export async function testLogDir(prefix: string, count: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  for (let i = 0; i < count; i++) await writeFile(join(dir, `log${i}.txt`), testLog(i));
  return dir;
}
