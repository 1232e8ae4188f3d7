import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { collectRun } from "../../../../src/core/distill/run.ts";
import {
  callPath,
  normalizeCommand,
  normalizePath,
  stableJson,
  supersededIn,
} from "../../../../src/core/items/superseded.ts";
import { oneLine } from "../../../../src/core/shared/text.ts";
import type { RunSpan, SnapEntry, SnapToolCall } from "../../../../src/core/shared/types.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { assistantEntry, callResultEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

let seq = 0;
const nextId = () => `e${++seq}`;

const user = (text: string): SnapEntry => userEntry(nextId(), text);
const assistant = (text: string, toolCalls: SnapToolCall[] = []): SnapEntry =>
  assistantEntry(nextId(), text, toolCalls);
const result = (c: SnapToolCall, text = "output"): SnapEntry => callResultEntry(nextId(), c, text);

let callSeq = 0;
const call = (name: string, args: Record<string, unknown>): SnapToolCall => toolCall(`c${++callSeq}`, name, args);

/** One assistant turn per group of calls, each followed by its results. */
function run(turns: SnapToolCall[][], before: SnapEntry[] = []): { entries: SnapEntry[]; span: RunSpan } {
  const entries = [...before, user("do the thing")];
  for (const calls of turns) {
    entries.push(assistant("", calls));
    for (const c of calls) entries.push(result(c));
  }
  entries.push(assistant("done"));
  const span = collectRun(entries, 3);
  if (!span) throw new Error("no span");
  return { entries, span };
}

/** The result entry id of a call. */
function resultOf(entries: SnapEntry[], c: SnapToolCall): string {
  const r = entries.find((e) => e.role === "toolResult" && e.toolCallId === c.id);
  if (!r) throw new Error(`no result for ${c.id}`);
  return r.id;
}

describe("normalizers", () => {
  it("strips ./ prefixes and inner /./", () => {
    expect(normalizePath("./src/a.ts")).toBe("src/a.ts");
    expect(normalizePath("././src/./a.ts")).toBe("src/a.ts");
    expect(normalizePath("src/a.ts")).toBe("src/a.ts");
  });

  it("collapses whitespace and drops a trailing 2>&1", () => {
    expect(normalizeCommand("  npm   test\n  -- foo 2>&1 ")).toBe("npm test -- foo");
    expect(normalizeCommand("a 2>&1 | tail")).toBe("a 2>&1 | tail");
  });

  it("serializes objects with sorted keys at every depth", () => {
    expect(stableJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
  });
});

describe("supersededIn", () => {
  it("marks a read whose file was edited later, with the turn distance", () => {
    const read = call("read", { path: "./src/a.ts" });
    const edit = call("edit", { path: "src/a.ts", oldText: "x", newText: "y" });
    const { entries, span } = run([
      [read],
      [call("bash", { command: "ls" })],
      [call("grep", { pattern: "x" })],
      [edit],
    ]);
    const notes = supersededIn(entries, span);
    expect(notes.get(resultOf(entries, read))).toBe(
      "this file was changed after this read (edit src/a.ts, 3 turns later)",
    );
    expect(notes.size).toBe(1);
  });

  it("names the nearest later change, counts one turn in the singular and handles write", () => {
    const read = call("read", { file_path: "src/b.ts" });
    const write = call("write", { path: "./src/b.ts", content: "new" });
    const edit = call("edit", { path: "src/b.ts", oldText: "n", newText: "m" });
    const { entries, span } = run([[read], [write], [edit]]);
    expect(supersededIn(entries, span).get(resultOf(entries, read))).toBe(
      "this file was changed after this read (write src/b.ts, 1 turn later)",
    );
  });

  it("says 'in the same turn' when the change is a later call of the same message", () => {
    const read = call("read", { path: "src/c.ts" });
    const edit = call("edit", { path: "src/c.ts", oldText: "a", newText: "b" });
    const { entries, span } = run([[read, edit]]);
    expect(supersededIn(entries, span).get(resultOf(entries, read))).toBe(
      "this file was changed after this read (edit src/c.ts, in the same turn)",
    );
  });

  it("does not mark a read of a file changed only before it, or a different file", () => {
    const edit = call("edit", { path: "src/a.ts", oldText: "a", newText: "b" });
    const read = call("read", { path: "src/a.ts" });
    const other = call("read", { path: "src/z.ts" });
    const { entries, span } = run([
      [edit],
      [read, other],
      [call("edit", { path: "src/y.ts", oldText: "", newText: "" })],
    ]);
    const notes = supersededIn(entries, span);
    expect(notes.has(resultOf(entries, read))).toBe(false);
    expect(notes.has(resultOf(entries, other))).toBe(false);
  });

  it("marks a read repeated with the same offset and limit, not one with a different range", () => {
    const first = call("read", { path: "src/a.ts", offset: 10, limit: 20 });
    const otherRange = call("read", { path: "src/a.ts", offset: 40, limit: 20 });
    const again = call("read", { path: "./src/a.ts", limit: 20, offset: 10 });
    const whole = call("read", { path: "src/a.ts" });
    const { entries, span } = run([[first], [otherRange], [again], [whole]]);
    const notes = supersededIn(entries, span);
    expect(notes.get(resultOf(entries, first))).toBe("the same file was read again later");
    expect(notes.has(resultOf(entries, otherRange))).toBe(false);
    expect(notes.has(resultOf(entries, again))).toBe(false);
    expect(notes.has(resultOf(entries, whole))).toBe(false);
  });

  it("prefers the change note over the re-read note", () => {
    const first = call("read", { path: "src/a.ts" });
    const { entries, span } = run([
      [first],
      [call("read", { path: "src/a.ts" })],
      [call("edit", { path: "src/a.ts", oldText: "a", newText: "b" })],
    ]);
    expect(supersededIn(entries, span).get(resultOf(entries, first))).toMatch(/^this file was changed/);
  });

  it("marks a command that ran again, with whitespace and a trailing 2>&1 normalized", () => {
    const first = call("bash", { command: "npm test  -- src/a.test.ts 2>&1" });
    const second = call("bash", { command: "npm   test -- src/a.test.ts", timeout: 60 });
    const different = call("bash", { command: "npm test -- src/b.test.ts" });
    const { entries, span } = run([[first], [different], [second]]);
    const notes = supersededIn(entries, span);
    expect(notes.get(resultOf(entries, first))).toBe("the same command ran again later");
    expect(notes.has(resultOf(entries, different))).toBe(false);
    expect(notes.has(resultOf(entries, second))).toBe(false);
  });

  it("marks any other tool called again with identical arguments, whatever the key order", () => {
    const first = call("grep", { pattern: "status", path: "src" });
    const same = call("grep", { path: "src", pattern: "status" });
    const { entries, span } = run([[first], [same]]);
    const notes = supersededIn(entries, span);
    expect(notes.get(resultOf(entries, first))).toBe("the same call was made again later");
    expect(notes.has(resultOf(entries, same))).toBe(false);
  });

  it("does not mark calls whose arguments or tool differ", () => {
    const grep = call("grep", { pattern: "status", path: "src" });
    const find = call("find", { pattern: "status", path: "src" });
    const nested = call("mcp", { q: { a: 1, b: [1, 2] } });
    const { entries, span } = run([
      [grep, find, nested],
      [call("grep", { pattern: "status", path: "test" })],
      [call("mcp", { q: { a: 1, b: [2, 1] } })],
    ]);
    expect(supersededIn(entries, span).size).toBe(0);
  });

  it("ignores calls from before the run", () => {
    const oldRead = call("read", { path: "src/a.ts" });
    const before = [user("earlier"), assistant("", [oldRead]), result(oldRead), assistant("ok")];
    const { entries, span } = run([[call("edit", { path: "src/a.ts", oldText: "a", newText: "b" })]], before);
    expect(supersededIn(entries, span).size).toBe(0);
  });

  it("handles a run of 5,000 calls in one pass", () => {
    const turns: SnapToolCall[][] = [];
    for (let i = 0; i < 5000; i++) {
      const k = i % 50;
      if (i % 4 === 0) turns.push([call("read", { path: `src/f${k}.ts` })]);
      else if (i % 4 === 1) turns.push([call("edit", { path: `src/f${k}.ts`, oldText: `${i}`, newText: "x" })]);
      else if (i % 4 === 2) turns.push([call("bash", { command: `npm test ${k}` })]);
      else turns.push([call("grep", { pattern: `p${k}` })]);
    }
    const { entries, span } = run(turns);
    const notes = supersededIn(entries, span);
    // The 1,250 edits all differ; nearly every read, command and grep is repeated or changed later.
    expect(notes.size).toBeGreaterThan(3500);
    expect(notes.size).toBeLessThanOrEqual(3750);
  });
});

// The backward walk supersededIn was before it became a fold, kept as the reference the fold must equal.
function referenceSupersededIn(entries: SnapEntry[], span: RunSpan): Map<string, string> {
  const calls: Array<{ call: SnapToolCall; turn: number }> = [];
  const results: SnapEntry[] = [];
  let turn = 0;
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const e = entries[i] as SnapEntry;
    if (e.role === "assistant") {
      turn++;
      for (const call of e.toolCalls ?? []) calls.push({ call, turn });
    } else if (e.role === "toolResult" && e.toolCallId !== undefined) results.push(e);
  }
  const laterChange = new Map<string, { tool: string; path: string; turn: number }>();
  const laterReads = new Set<string>();
  const laterCommands = new Set<string>();
  const laterCalls = new Set<string>();
  const noteByCallId = new Map<string, string>();
  const later = (n: number) => (n <= 0 ? "in the same turn" : `${n} ${n === 1 ? "turn" : "turns"} later`);
  for (let i = calls.length - 1; i >= 0; i--) {
    const { call, turn } = calls[i] as { call: SnapToolCall; turn: number };
    const args = call.args ?? {};
    let note: string | undefined;
    if (call.name === "read") {
      const path = callPath(args);
      if (path !== undefined) {
        const signature = stableJson([path, args.offset ?? null, args.limit ?? null]);
        const change = laterChange.get(path);
        if (change !== undefined)
          note = `this file was changed after this read (${change.tool} ${oneLine(change.path, 80)}, ${later(change.turn - turn)})`;
        else if (laterReads.has(signature)) note = "the same file was read again later";
        laterReads.add(signature);
      }
    } else if (call.name === "bash" && typeof args.command === "string") {
      const command = normalizeCommand(args.command);
      if (laterCommands.has(command)) note = "the same command ran again later";
      laterCommands.add(command);
    } else {
      const key = `${call.name}\u0000${stableJson(args)}`;
      if (laterCalls.has(key)) note = "the same call was made again later";
      laterCalls.add(key);
      const path = call.name === "edit" || call.name === "write" ? callPath(args) : undefined;
      if (path !== undefined) laterChange.set(path, { tool: call.name, path, turn });
    }
    if (note !== undefined) noteByCallId.set(call.id, note);
    else noteByCallId.delete(call.id);
  }
  const out = new Map<string, string>();
  for (const r of results) {
    const note = noteByCallId.get(r.toolCallId as string);
    if (note !== undefined) out.set(r.id, note);
  }
  return out;
}

describe("supersededIn as a fold", () => {
  const callArb = fc.record({
    name: fc.constantFrom("read", "edit", "write", "bash", "grep"),
    path: fc.constantFrom("a.ts", "./a.ts", "b.ts", undefined),
    offset: fc.constantFrom(undefined, 1, 40),
    command: fc.constantFrom("ls", "ls  2>&1", "npm test", 3),
    id: fc.nat(40),
  });
  const stepArb = fc.oneof(
    fc.array(callArb, { minLength: 0, maxLength: 3 }).map((calls) => ({ kind: "turn" as const, calls })),
    fc.nat(40).map((id) => ({ kind: "result" as const, id })),
  );

  it("gives the notes of the backward walk, whatever the calls, repeats and reused ids", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 60 }), (steps) => {
        const entries: SnapEntry[] = [userEntry("u", "q")];
        steps.forEach((s, k) => {
          if (s.kind === "result") entries.push(toolResultEntry(`r${k}`, `c${s.id}`, "bash", "out"));
          else {
            const calls = s.calls.map((c) =>
              toolCall(`c${c.id}`, c.name, {
                ...(c.path === undefined ? {} : { path: c.path }),
                ...(c.offset === undefined ? {} : { offset: c.offset }),
                ...(c.name === "bash" ? { command: c.command } : {}),
              }),
            );
            entries.push(assistantEntry(`a${k}`, "", calls));
          }
        });
        const span = collectRun(entries, 0) as RunSpan;
        expect(supersededIn(entries, span)).toEqual(referenceSupersededIn(entries, span));
      }),
      propertyParams(500),
    );
  });
});
