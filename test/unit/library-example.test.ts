// The README's library example, run as written against the real code: its code block is taken from
// README.md, pointed at src/index.ts instead of the package name, and given the two values the README
// says the caller brings (Pi's projection and a classify function).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, describe, expect, it } from "vitest";
import type { RunEndResult } from "../../src/index.ts";
import { dropAll } from "../kit/answers.ts";
import { REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { FAUX_USAGE } from "../kit/pi-messages.ts";

const dir = mkdtempSync(join(tmpdir(), "cg-library-example-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first ```ts block of the README's "Use as a library" section. */
function example(): string {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use as a library"));
  const code = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf("\n## ", 3)))?.[1];
  if (!code) throw new Error("README.md has no ts block under 'Use as a library'");
  return code;
}

/** A finished run with one large grep output, as Pi's SessionManager projects it. */
function projection(): unknown[] {
  const sm = SessionManager.inMemory("/tmp/cg-library-example");
  const now = Date.now();
  const model = { api: "openai-completions", provider: "fake", model: "m", usage: FAUX_USAGE, timestamp: now };
  sm.appendMessage({ role: "user", content: [{ type: "text", text: "where is needle?" }], timestamp: now });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: "c1", name: "bash", arguments: { command: "rg -n needle" } }],
    stopReason: "toolUse",
    ...model,
  } as never);
  const lines = Array.from({ length: 600 }, (_, i) => `src/f${i % 9}.ts:${i}: const value_${i} = ${i}; // hay`);
  sm.appendMessage({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "bash",
    content: [{ type: "text", text: lines.join("\n") }],
    isError: false,
    timestamp: now,
  } as never);
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "needle is not there" }],
    stopReason: "stop",
    ...model,
  } as never);
  return sm.buildSessionProjection().entries;
}

describe("the README's library example", () => {
  it("runs as written and returns the drafts for Pi", async () => {
    const code = example();
    expect(code).toMatch(/from "pi-context-guard"/);
    const index = pathToFileURL(join(REPO_ROOT, "src", "index.ts")).href;
    const inputs = "const { context, classify } = (globalThis as any).__libraryExample;\n";
    const file = join(dir, "example.ts");
    writeFileSync(
      file,
      `${inputs}${code.replaceAll('"pi-context-guard"', JSON.stringify(index))}\nexport { result };\n`,
    );
    let calls = 0;
    (globalThis as { __libraryExample?: unknown }).__libraryExample = {
      context: projection(),
      classify: (...args: Parameters<typeof dropAll>) => {
        calls++;
        return dropAll(...args);
      },
    };
    try {
      const { result } = (await import(pathToFileURL(file).href)) as { result: RunEndResult };
      expect(result.status).toBe("done");
      if (result.status !== "done") return;
      expect(calls).toBeGreaterThan(0);
      expect(result.edits).toHaveLength(1);
      expect(result.edits[0]).toMatchObject({ type: "context_edit" });
      expect(result.record.results.length).toBeGreaterThan(0);
    } finally {
      delete (globalThis as { __libraryExample?: unknown }).__libraryExample;
    }
  });
});
