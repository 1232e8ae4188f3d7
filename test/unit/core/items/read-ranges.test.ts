// Every offset and limit Pi's read tool takes, including fractional and negative ones, read from a file by
// Pi's own read tool: the guard must find the same lines at the same place in the untouched file, or a
// read of an unchanged file is stubbed as "changed on disk".
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createReadToolDefinition } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBody, readMatchesFile, startLineOf } from "../../../../src/core/items/stale-reads.ts";

let dir: string;
const FILE = "lines.txt";
// Long enough for Pi's line cap to cut a whole read.
const TEXT = `${Array.from({ length: 2300 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cg-read-ranges-"));
  writeFileSync(join(dir, FILE), TEXT);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function piRead(args: Record<string, unknown>): Promise<string> {
  const tool = createReadToolDefinition(dir);
  const result = await tool.execute("call", { path: FILE, ...args } as never, undefined, undefined, undefined as never);
  const block = result.content[0];
  return block?.type === "text" ? block.text : "";
}

const OFFSETS = [undefined, 0, 1, 2, 2.5, 0.5, 1.5, -1, -3.5, 7.9, 2299, 2300.2];
const LIMITS = [undefined, 0, 1, 3, 2.5, 0.4, -1, -2.5, 10_000];

describe("the guard's view of a read against Pi's read tool", () => {
  it("finds each read's lines where Pi took them in the unchanged file", async () => {
    for (const offset of OFFSETS)
      for (const limit of LIMITS) {
        const args = { ...(offset === undefined ? {} : { offset }), ...(limit === undefined ? {} : { limit }) };
        const output = await piRead(args);
        const body = readBody(output);
        const start = startLineOf(args);
        expect([args, start !== undefined]).toEqual([args, true]);
        // Only a notice (the limit selected no line): nothing to compare, so never stale.
        if (body === undefined) {
          expect(output).toMatch(/^\n\n\[/);
          continue;
        }
        const toEnd = body === output;
        expect([args, readMatchesFile(body as string, start as number, TEXT, toEnd)]).toEqual([args, true]);
      }
  });

  it("does not find them once a line in the range changed", async () => {
    const output = await piRead({ offset: 2.5, limit: 3 });
    expect(output.startsWith("line 2\n")).toBe(true);
    const changed = TEXT.replace("line 3\n", "line three\n");
    expect(readMatchesFile(readBody(output) as string, startLineOf({ offset: 2.5 }) as number, changed, false)).toBe(
      false,
    );
  });
});
