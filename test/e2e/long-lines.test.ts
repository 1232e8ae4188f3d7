// Long lines and huge outputs end to end in the real Pi (issue 23, breaks 9 and 10): a recall pattern
// that matches only at column 10,000 of a minified line finds it, and a ~5 MB tool output gets a record
// result instead of being silently left out of the pass. The outputs come from a custom tool (Pi's own
// bash and read tools truncate what they return).
import type { InlineExtension } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { afterEach, describe, expect, it } from "vitest";
import { type FaultSession, faultSession } from "../kit/fault-session.ts";
import { keywordPolicy } from "../kit/loopback-classifier.ts";

/** A minified bundle line of `length` chars with `needle_fn(` only at 0-based column `at`. */
function minifiedLine(length: number, at: number): string {
  const filler = "var a=1;b(c,d);".repeat(Math.ceil(length / 15));
  return `${filler.slice(0, at)}needle_fn(${filler.slice(at + 10)}`.slice(0, length);
}

const NEEDLE_AT = 10_000;
const MINIFIED = `// bundle.min.js\n${minifiedLine(40_000, NEEDLE_AT)}\n// end\n`;

/** About 5 MB of build log with one line the answer needs in the middle. */
function hugeLog(): string {
  const line = "build step ok: compiled module without warnings, nothing to report here\n";
  const half = line.repeat(35_000);
  return `${half}FATAL hot_symbol missing in src/core/hot.ts\n${half}`;
}
const HUGE = hugeLog();

/** `dump {what}` returns one of the generated outputs as its text. */
const dumpTool: InlineExtension = (pi) => {
  pi.registerTool({
    name: "dump",
    label: "Dump",
    description: "Print a generated artifact",
    parameters: Type.Object({ what: Type.String() }),
    async execute(_id, params: { what: string }) {
      const text = params.what === "huge" ? HUGE : MINIFIED;
      return { content: [{ type: "text", text }], details: undefined };
    },
  });
};

type Entry = { id: string; type: string; message?: { role?: string; toolName?: string } };

const toolResultIds = (s: FaultSession, tool: string): string[] =>
  (s.session.sessionManager.getBranch() as unknown as Entry[])
    .filter((e) => e.type === "message" && e.message?.role === "toolResult" && e.message.toolName === tool)
    .map((e) => e.id);

function lastToolResultText(s: FaultSession): string {
  const messages = (s.contexts.at(-1) ?? []) as Array<{ role?: string; content?: Array<{ text?: string }> }>;
  const results = messages.filter((m) => m.role === "toolResult");
  return (
    results
      .at(-1)
      ?.content?.map((b) => b.text ?? "")
      .join("\n") ?? ""
  );
}

let open: FaultSession | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

describe("recall of a long line in the real Pi", () => {
  it("finds a pattern that matches only at column 10,000 of a minified line, shown around the match", async () => {
    const s = await faultSession({
      config: { midRun: false },
      extensionFactories: [dumpTool],
      responses: [{ toolCalls: [{ name: "dump", arguments: { what: "minified" } }] }, "The bundle is minified."],
    });
    open = s;
    await s.session.prompt("Show me the bundle.");
    s.addResponses(
      () => ({
        toolCalls: [
          { name: "recall", arguments: { entryId: toolResultIds(s, "dump")[0] ?? "", pattern: "needle_fn\\(" } },
        ],
      }),
      "needle_fn is called in the bundle.",
    );
    await s.session.prompt("Where does the bundle call needle_fn?");
    const id = toolResultIds(s, "dump")[0] as string;
    const recalled = lastToolResultText(s);
    // Before the fix: "[no lines match the pattern]" (only the first 4,000 chars of a line were matched).
    expect(recalled).not.toContain("no lines match");
    const [shown, note] = recalled.split("\n");
    expect(shown?.startsWith("2: …")).toBe(true);
    expect(shown).toContain("needle_fn(");
    expect(shown?.length).toBeLessThan(4100);
    expect(note).toContain(`[line 2 cut: it is 40000 chars; shown are chars ${NEEDLE_AT - 999}–`);
    expect(note).toContain(`recall({"entryId":"${id}","offset":2,"limit":1}) shows all of it`);
  });
});

describe("a ~5 MB output in the real Pi", () => {
  it("is judged and gets a record result: distilled to the line the answer needs", async () => {
    expect(HUGE.length).toBeGreaterThan(5_000_000);
    const s = await faultSession({
      config: { midRun: false, timeoutMs: 30_000 },
      policy: keywordPolicy(/hot_symbol/),
      extensionFactories: [dumpTool],
      responses: [
        { toolCalls: [{ name: "dump", arguments: { what: "huge" } }] },
        "The build fails because hot_symbol is missing in src/core/hot.ts.",
      ],
    });
    open = s;
    const before = s.classifier.requests.length;
    await s.session.prompt("Why does the build fail?");
    const id = toolResultIds(s, "dump")[0] as string;
    // Before the fix: every chunk was larger than a request carries, nothing was sent, and no record
    // was written at all.
    expect(s.classifier.requests.length - before).toBeGreaterThan(100);
    const results = s.records().flatMap((r) => r.results);
    const result = results.find((r) => r.entryId === id);
    expect(result).toMatchObject({ kind: "large", outcome: "distilled", beforeChars: HUGE.length });
    expect(s.edits().map((e) => e.targetId)).toContain(id);
    // The model now sees the needed line, verbatim, and far less than 5 MB.
    s.addResponses("ok");
    await s.session.prompt("thanks");
    const seen = lastToolResultText(s);
    expect(seen.startsWith("[context-guard] Distilled the output of dump")).toBe(true);
    expect(seen).toContain("FATAL hot_symbol missing in src/core/hot.ts");
    expect(seen.length).toBeLessThan(50_000);
  });

  it("whose requests do not finish before the deadline is kept, and the record says why", async () => {
    const s = await faultSession({
      config: { midRun: false, timeoutMs: 600 },
      extensionFactories: [dumpTool],
      responses: [{ toolCalls: [{ name: "dump", arguments: { what: "huge" } }] }, "The build fails."],
    });
    open = s;
    s.classifier.set({ behaviour: "hang" });
    await s.session.prompt("Why does the build fail?");
    const id = toolResultIds(s, "dump")[0] as string;
    const record = s.records().at(-1);
    expect(record?.timedOut).toBe(true);
    const result = record?.results.find((r) => r.entryId === id);
    expect(result).toMatchObject({ kind: "large", outcome: "kept", reason: "timeout", beforeChars: HUGE.length });
    expect(s.edits()).toEqual([]);
  });
});
