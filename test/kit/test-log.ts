/** A vitest-style log of `lines` lines with one failure (line 50): the large output many e2e runs `cat`. */
export function testLog(n: number, lines = 200): string {
  const out = Array.from({ length: lines }, (_, i) =>
    i === 50 ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i}` : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${out.join("\n")}\n`;
}
