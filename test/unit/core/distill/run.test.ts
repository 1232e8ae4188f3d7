import { describe, expect, it } from "vitest";
import {
  collectCandidates,
  collectHistory,
  collectRun,
  findRunStart,
  IMAGE_ONLY,
  isSteering,
  runWorthDistilling,
  STEERING_MARKER,
  toolLabel,
} from "../../../../src/core/distill/run.ts";
import { GUARD_MARKER, type RunSpan, type SnapEntry, type SnapToolCall } from "../../../../src/core/shared/types.ts";
import {
  assistantEntry,
  branchSummaryEntry,
  compactionEntry,
  customMessageEntry,
  hiddenEntry,
  toolCall,
  toolResultEntry,
  userEntry,
} from "../../../kit/snap.ts";

let seq = 0;
const id = () => `e${++seq}`;

const user = (text: string, images = 0): SnapEntry => userEntry(id(), text, { images });
const assistant = (text: string, toolCalls: SnapToolCall[] = [], stopReason?: string): SnapEntry =>
  assistantEntry(id(), text, toolCalls, stopReason ? { stopReason } : {});
const call = (callId: string, name: string, args: Record<string, unknown> = {}): SnapToolCall =>
  toolCall(callId, name, args);
const result = (callId: string, name: string, text: string, extra: Partial<SnapEntry> = {}): SnapEntry =>
  toolResultEntry(id(), callId, name, text, extra);
const notice = (text: string): SnapEntry => customMessageEntry(id(), "notice", text);
const stateOnly = (): SnapEntry => hiddenEntry(id(), "custom");
const compaction = (summary: string): SnapEntry => compactionEntry(id(), summary, { text: summary });
const branchSummary = (summary: string): SnapEntry => branchSummaryEntry(id(), summary, { text: summary });

/** A completed run: prompt, one tool call, its result, the final answer. */
function simpleRun(prompt: string, answer: string): SnapEntry[] {
  const c = call(`c${++seq}`, "bash", { command: "ls" });
  return [user(prompt), assistant("", [c]), result(c.id, "bash", "out"), assistant(answer)];
}

describe("isSteering", () => {
  it("treats a user message after a tool result as steering", () => {
    const c = call("c1", "bash");
    const entries = [user("go"), assistant("", [c]), result("c1", "bash", "x"), user("also this")];
    expect(isSteering(entries, 3)).toBe(true);
  });

  it("treats a user message after an assistant message with tool calls as steering", () => {
    const entries = [user("go"), assistant("working", [call("c1", "bash")]), user("also this")];
    expect(isSteering(entries, 2)).toBe(true);
  });

  it("skips custom notices and invisible entries when looking back", () => {
    const c = call("c1", "bash");
    const entries = [user("go"), assistant("", [c]), result("c1", "bash", "x"), notice("subagent done"), stateOnly()];
    entries.push(user("and now?"));
    expect(isSteering(entries, 5)).toBe(true);
  });

  it("is not steering after a plain assistant answer, even with a notice in between", () => {
    const entries = [user("go"), assistant("done"), notice("hi"), user("next")];
    expect(isSteering(entries, 3)).toBe(false);
  });

  it("is not steering after an assistant message whose tool calls never ran (aborted or error)", () => {
    const entries = [user("go"), assistant("", [call("c1", "bash")], "aborted"), user("next")];
    expect(isSteering(entries, 2)).toBe(false);
    const errored = [user("go"), assistant("", [call("c1", "bash")], "error"), user("next")];
    expect(isSteering(errored, 2)).toBe(false);
  });

  it("is not steering for the first message", () => {
    expect(isSteering([user("hello")], 0)).toBe(false);
  });
});

describe("findRunStart", () => {
  it("walks back past steering messages to the prompt", () => {
    const c1 = call("c1", "bash");
    const c2 = call("c2", "bash");
    const entries = [
      ...simpleRun("old", "old answer"),
      user("prompt"),
      assistant("", [c1]),
      result("c1", "bash", "x"),
      user("steer 1"),
      assistant("", [c2]),
      notice("n"),
      result("c2", "bash", "y"),
      user("steer 2"),
      assistant("final"),
    ];
    expect(findRunStart(entries)).toBe(4);
  });

  it("accepts a prompt without text", () => {
    const entries = [...simpleRun("old", "a"), user("", 1), assistant("answer")];
    expect(findRunStart(entries)).toBe(4);
  });

  it("ignores invisible user messages and returns -1 when there is no prompt", () => {
    expect(findRunStart([assistant("hi")])).toBe(-1);
    const hidden: SnapEntry = { ...user("omitted"), visible: false };
    expect(findRunStart([hidden, assistant("x")])).toBe(-1);
  });
});

describe("toolLabel", () => {
  it("labels bash with the whitespace-collapsed command, clipped", () => {
    expect(toolLabel("bash", { command: "rg  -n\n  foo   src" })).toBe("bash `rg -n foo src`");
    const long = toolLabel("bash", { command: `echo ${"x".repeat(200)}` });
    expect(long.length).toBeLessThanOrEqual("bash ``".length + 80);
    expect(long.endsWith("…`")).toBe(true);
  });

  it("labels the same arguments per tool, and arguments that are no object without throwing", () => {
    const args = { path: "src/a.ts" };
    expect(toolLabel("read", args)).toBe("read src/a.ts");
    expect(toolLabel("ls", args)).toBe("ls src/a.ts");
    expect(toolLabel("read", args)).toBe("read src/a.ts");
    const odd = "rm -rf build" as unknown as Record<string, unknown>;
    expect(toolLabel("bash", odd)).toBe('bash "rm -rf build"');
    expect(toolLabel("bash", null as unknown as Record<string, unknown>)).toBe("bash");
  });

  it("labels read with the path and line range", () => {
    expect(toolLabel("read", { path: "src/a.ts" })).toBe("read src/a.ts");
    expect(toolLabel("read", { path: "src/a.ts", offset: 40, limit: 20 })).toBe("read src/a.ts (lines 40–59)");
    expect(toolLabel("read", { path: "src/a.ts", offset: 40 })).toBe("read src/a.ts (lines 40–…)");
  });

  it("labels grep, find and ls with pattern and path", () => {
    expect(toolLabel("grep", { pattern: "status", path: "src" })).toBe('grep "status" src');
    expect(toolLabel("find", { pattern: "*.ts" })).toBe("find *.ts");
    expect(toolLabel("ls", { path: "src/core" })).toBe("ls src/core");
    expect(toolLabel("ls", {})).toBe("ls .");
  });

  it("labels other tools with compact JSON clipped to 80 chars", () => {
    expect(toolLabel("web_fetch", { url: "https://x.dev" })).toBe('web_fetch {"url":"https://x.dev"}');
    expect(toolLabel("noargs", {})).toBe("noargs");
    const long = toolLabel("mcp", { q: "y".repeat(300) });
    expect(long.length).toBe("mcp ".length + 80);
  });
});

describe("collectHistory", () => {
  const session = () => [
    ...simpleRun("first request", "first answer"),
    ...simpleRun("second", "second answer"),
    ...simpleRun("third", "third answer"),
    ...simpleRun("fourth", "fourth answer"),
  ];

  it("returns the last n exchanges oldest first, each with the last assistant text", () => {
    const entries = [user("q"), assistant("early note", [call("c9", "bash")]), result("c9", "bash", "x")];
    entries.push(assistant("the last word"), notice("after"), ...simpleRun("next", "next answer"));
    const h = collectHistory(entries, entries.length, 2);
    expect(h.exchanges).toEqual([
      { user: "q", assistant: "the last word" },
      { user: "next", assistant: "next answer" },
    ]);
    expect(h.firstRequest).toBeUndefined();
  });

  it("adds firstRequest only when the first prompt is not among the included exchanges", () => {
    const entries = session();
    const three = collectHistory(entries, entries.length, 3);
    expect(three.exchanges.map((x) => x.user)).toEqual(["second", "third", "fourth"]);
    expect(three.firstRequest).toBe("first request");
    const four = collectHistory(entries, entries.length, 4);
    expect(four.exchanges).toHaveLength(4);
    expect(four.firstRequest).toBeUndefined();
  });

  it("only looks before beforeIndex", () => {
    const entries = session();
    const h = collectHistory(entries, 8, 5);
    expect(h.exchanges.map((x) => x.user)).toEqual(["first request", "second"]);
  });

  it("counts steering messages as exchanges and shows image-only prompts with a placeholder", () => {
    const c = call("c1", "bash");
    const entries = [user("", 2), assistant("", [c]), result("c1", "bash", "x"), user("steer"), assistant("ok")];
    const h = collectHistory(entries, entries.length, 3);
    expect(h.exchanges).toEqual([
      { user: IMAGE_ONLY, assistant: "" },
      { user: "steer", assistant: "ok" },
    ]);
  });

  it("takes the latest compaction or branch summary", () => {
    const entries = [compaction("old summary"), ...simpleRun("a", "b"), branchSummary("branch summary")];
    entries.push(...simpleRun("c", "d"));
    expect(collectHistory(entries, entries.length, 3).summary).toBe("branch summary");
    expect(collectHistory(entries, 3, 3).summary).toBe("old summary");
  });

  it("clips long parts keeping head and tail", () => {
    const long = `HEAD${"a".repeat(5000)}TAIL`;
    const entries = [compaction(long), user(long), assistant(long), user(long), assistant("x")];
    const h = collectHistory(entries, entries.length, 1);
    const [ex] = h.exchanges;
    expect(h.summary?.length).toBe(2000);
    expect(ex?.user.length).toBe(800);
    expect(ex?.user.startsWith("HEAD")).toBe(true);
    expect(ex?.user.endsWith("TAIL")).toBe(true);
    expect(ex?.user).toContain("[…]");
    expect(h.firstRequest?.length).toBe(1000);
    const withAnswer = collectHistory(entries, 3, 1);
    expect(withAnswer.exchanges[0]?.assistant.length).toBe(1200);
  });

  it("returns nothing for n = 0", () => {
    const entries = [compaction("s"), ...session()];
    expect(collectHistory(entries, entries.length, 0)).toEqual({ exchanges: [] });
  });
});

describe("collectRun", () => {
  it("joins steering messages into the question and keeps one run", () => {
    const c1 = call("c1", "bash", { command: "ls" });
    const c2 = call("c2", "read", { path: "a.ts" });
    const entries = [
      ...simpleRun("earlier", "earlier answer"),
      user("fix the bug"),
      assistant("looking", [c1]),
      result("c1", "bash", "x"),
      user("also check a.ts"),
      assistant("reading", [c2]),
      result("c2", "read", "y"),
      user("", 1),
      assistant("done: fixed"),
    ];
    const span = collectRun(entries, 3);
    expect(span?.startIndex).toBe(4);
    expect(span?.promptId).toBe(entries[4]?.id);
    expect(span?.question).toBe(
      `fix the bug\n\n${STEERING_MARKER}\nalso check a.ts\n\n${STEERING_MARKER}\n${IMAGE_ONLY}`,
    );
    expect(span?.answer).toBe("done: fixed");
    expect(span?.notes).toBe("looking\n\nreading");
    expect([...(span?.calls.keys() ?? [])]).toEqual(["c1", "c2"]);
    expect(span?.calls.get("c2")?.args).toEqual({ path: "a.ts" });
    expect(span?.history.exchanges).toEqual([{ user: "earlier", assistant: "earlier answer" }]);
  });

  it("uses the placeholder for an image-only prompt instead of an older question", () => {
    const entries = [...simpleRun("old question", "old"), user("", 1), assistant("I see a cat")];
    const span = collectRun(entries, 3);
    expect(span?.question).toBe(IMAGE_ONLY);
    expect(span?.answer).toBe("I see a cat");
    expect(span?.notes).toBe("");
  });

  it("passes historyExchanges through and returns undefined without a prompt", () => {
    const entries = [...simpleRun("a", "b"), ...simpleRun("c", "d")];
    expect(collectRun(entries, 0)?.history).toEqual({ exchanges: [] });
    expect(collectRun([assistant("x")], 3)).toBeUndefined();
  });
});

describe("collectCandidates", () => {
  const config = { minResultChars: 100, excludeTools: ["edit", "write"], distillErrors: true };
  const big = "x".repeat(150);

  function spanFor(results: SnapEntry[]): { entries: SnapEntry[]; span: RunSpan } {
    const calls = results.map((r) => call(r.toolCallId ?? "", r.toolName ?? "", { command: `cmd ${r.toolCallId}` }));
    const entries = [...simpleRun("old", "a"), user("q"), assistant("", calls), ...results, assistant("answer")];
    const span = collectRun(entries, 3);
    if (!span) throw new Error("no span");
    return { entries, span };
  }

  it("keeps big plain results of the run and matches them with their calls", () => {
    const { entries, span } = spanFor([result("k1", "bash", big)]);
    const got = collectCandidates(entries, span, config);
    expect(got).toEqual([
      {
        entryId: entries[6]?.id,
        tool: "bash",
        label: "bash `cmd k1`",
        args: { command: "cmd k1" },
        isError: false,
        text: big,
      },
    ]);
  });

  it("ignores results from before the run", () => {
    const c = call("old1", "bash");
    const entries = [user("old"), assistant("", [c]), result("old1", "bash", big), assistant("a")];
    entries.push(user("q"), assistant("answer"));
    const span = collectRun(entries, 3);
    if (!span) throw new Error("no span");
    expect(collectCandidates(entries, span, config)).toEqual([]);
  });

  it("applies the size, image, tool, marker and edit rules", () => {
    const { entries, span } = spanFor([
      result("small", "bash", "x".repeat(99)),
      result("exact", "bash", "x".repeat(100)),
      result("img", "bash", big, { images: 1 }),
      result("edit", "edit", big),
      result("marker", "bash", `${GUARD_MARKER} Removed ${big}`),
      result("ours", "bash", `${GUARD_MARKER} Distilled ${big}`, { edited: true, rawText: big }),
      result("theirs", "bash", big, { edited: true, rawText: `${big}raw` }),
      result("hidden", "bash", big, { visible: false }),
    ]);
    // A raw output that merely starts with the marker is the tool's own text: judged like any other.
    expect(collectCandidates(entries, span, config).map((c) => c.args.command)).toEqual(["cmd exact", "cmd marker"]);
  });

  it("takes error results only with distillErrors", () => {
    const { entries, span } = spanFor([result("err", "bash", big, { isError: true })]);
    expect(collectCandidates(entries, span, config).map((c) => c.isError)).toEqual([true]);
    expect(collectCandidates(entries, span, { ...config, distillErrors: false })).toEqual([]);
  });

  it("honours a custom excludeTools list", () => {
    const { entries, span } = spanFor([result("r1", "read", big), result("b1", "bash", big)]);
    const got = collectCandidates(entries, span, { ...config, excludeTools: ["read"] });
    expect(got.map((c) => c.tool)).toEqual(["bash"]);
  });

  it("falls back to the tool name and empty args when the call is unknown", () => {
    const entries = [user("q"), result("nowhere", "grep", big), assistant("a")];
    const span = collectRun(entries, 3);
    if (!span) throw new Error("no span");
    const [c] = collectCandidates(entries, span, config);
    expect(c?.tool).toBe("grep");
    expect(c?.args).toEqual({});
    expect(c?.label).toBe("grep");
  });
});

describe("runWorthDistilling", () => {
  const cand = (chars: number) => ({
    entryId: id(),
    tool: "bash",
    label: "bash",
    args: {},
    isError: false,
    text: "x".repeat(chars),
  });

  it("needs at least one candidate and minRunChars in total", () => {
    expect(runWorthDistilling([], 0)).toBe(false);
    expect(runWorthDistilling([cand(4000), cand(3999)], 8000)).toBe(false);
    expect(runWorthDistilling([cand(4000), cand(4000)], 8000)).toBe(true);
  });
});
