import { describe, expect, it } from "vitest";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { smallStub } from "../../../../src/core/items/small.ts";
import {
  CHANGED_ON_DISK,
  type ReadCheck,
  readBody,
  readMatchesFile,
  readsToCheck,
  withDiskChanges,
} from "../../../../src/core/items/stale-reads.ts";
import { PIN_TYPE, pinData } from "../../../../src/core/records/pins.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { dropAllAnswer } from "../../../kit/answers.ts";
import { assistantEntry, callResultEntry, hiddenEntry, toolCall, userEntry } from "../../../kit/snap.ts";

const READ_AT = 1_700_000_000_000;

function session(reads: Array<{ path: string; text: string; args?: Record<string, unknown> }>, later = []) {
  const calls = reads.map((r, i) => toolCall(`c${i}`, "read", { path: r.path, ...(r.args ?? {}) }));
  const entries: SnapEntry[] = [
    userEntry("u", "look at the files"),
    assistantEntry("a", "", calls),
    ...reads.map((r, i) => callResultEntry(`t${i}`, calls[i]!, r.text, { timestamp: READ_AT + i })),
    ...later,
    assistantEntry("z", "done"),
  ];
  return entries;
}

describe("readBody", () => {
  it("drops Pi's continuation notices and keeps the file text", () => {
    expect(readBody("3\n4\n\n[7 more lines in file. Use offset=5 to continue.]")).toBe("3\n4");
    expect(readBody("a\nb\n\n[Showing lines 1-2 of 900. Use offset=3 to continue.]")).toBe("a\nb");
    expect(readBody("a\nb\n\n[Showing lines 1-2 of 900 (50.0KB limit). Use offset=3 to continue.]")).toBe("a\nb");
    expect(readBody("a\nb\n")).toBe("a\nb\n");
  });

  it("has nothing to compare for a first line too long to show", () => {
    expect(readBody("[Line 1 is 2.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' x | head -c 51200]")).toBe(
      undefined,
    );
  });
});

describe("readMatchesFile", () => {
  it("matches the same lines at the read's offset", () => {
    expect(readMatchesFile("3\n4", 2, "1\n2\n3\n4\n5\n", false)).toBe(true);
    expect(readMatchesFile("3\n4", 2, "1\n2\n3\nfour\n5\n", false)).toBe(false);
    expect(readMatchesFile("3\n4", 2, "0\n1\n2\n3\n4\n", false)).toBe(false);
  });

  it("lets a partial read's file change after its range, but not a whole read's", () => {
    expect(readMatchesFile("a\nb", 0, "a\nb\nc", false)).toBe(true);
    expect(readMatchesFile("a\nb\n", 0, "a\nb\n", true)).toBe(true);
    expect(readMatchesFile("a\nb\n", 0, "a\nb\nc\n", true)).toBe(false);
    expect(readMatchesFile("a\nb\n", 0, "a\n", true)).toBe(false);
  });
});

describe("readsToCheck", () => {
  it("lists the run's successful reads with the path as given, first line, body and time", () => {
    const entries = session([
      { path: "./src/a.ts", text: "x\ny\n" },
      {
        path: "b.ts",
        text: "3\n4\n\n[7 more lines in file. Use offset=5 to continue.]",
        args: { offset: 3, limit: 2 },
      },
    ]);
    const span = collectRun(entries, 3)!;
    expect(readsToCheck(entries, span, new Map())).toEqual<ReadCheck[]>([
      { entryId: "t0", path: "./src/a.ts", startLine: 0, body: "x\ny\n", toEnd: true, readAt: READ_AT },
      { entryId: "t1", path: "b.ts", startLine: 2, body: "3\n4", toEnd: false, readAt: READ_AT + 1 },
    ]);
  });

  it("skips reads already superseded, failed, edited or without a time", () => {
    const entries = session([
      { path: "a.ts", text: "a" },
      { path: "b.ts", text: "b" },
      { path: "c.ts", text: "c" },
      { path: "d.ts", text: "d" },
    ]);
    entries[3] = { ...entries[3]!, isError: true };
    entries[4] = { ...entries[4]!, edited: true, rawText: "c" };
    delete entries[5]!.timestamp;
    const span = collectRun(entries, 3)!;
    expect(readsToCheck(entries, span, new Map([["t0", "edited later"]]))).toEqual([]);
  });
});

describe("withDiskChanges", () => {
  const entries = session([
    { path: "a.ts", text: "a" },
    { path: "b.ts", text: "b" },
  ]);
  const span = collectRun(entries, 3)!;

  it("adds the disk's note to the reads the check finds changed, keeping the others' notes", () => {
    const notes = withDiskChanges(entries, span, new Map([["t0", "edited later"]]), () => new Set(["t1"]));
    expect([...notes]).toEqual([
      ["t0", "edited later"],
      ["t1", CHANGED_ON_DISK],
    ]);
  });

  it("changes nothing without a check or when the check throws", () => {
    const before = new Map<string, string>();
    expect(withDiskChanges(entries, span, before, undefined)).toBe(before);
    const failing = () => {
      throw new Error("EACCES");
    };
    expect(withDiskChanges(entries, span, before, failing).size).toBe(0);
  });
});

const UNGATED = { ...DEFAULT_CONFIG, exchangeBreakEven: false };
// The run's own reads are judged only with keepReads off; an earlier run's stale read goes either way.
const JUDGING_READS = { ...UNGATED, keepReads: false };

function pass(entries: SnapEntry[], changed: string[]) {
  const plan = planRunEnd(entries, JUDGING_READS, undefined, () => new Set(changed)) as Extract<
    PassPlan,
    { status: "run" }
  >;
  expect(plan.status).toBe("run");
  const texts = plan.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? "");
  return {
    plan,
    out: finishPass({ plan, entries, texts, outcomes: plan.requests.map(dropAllAnswer), config: JUDGING_READS }),
  };
}

describe("a pass with reads changed on disk", () => {
  const lines = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word} line ${i + 1}`).join("\n");

  it("sends a small read as superseded and stubs it with a request to read it again", () => {
    const entries = session([
      { path: "small.ts", text: lines(40, "small") },
      { path: "big.ts", text: lines(900, "big") },
    ]);
    const { plan, out } = pass(entries, ["t0"]);
    const item = plan.small.find((i) => i.entryId === "t0");
    expect(item?.superseded).toBe(CHANGED_ON_DISK);
    const stub = out.drafts.find((d) => d.targetId === "t0")?.replacement?.content[0]?.text ?? "";
    expect(stub).toBe(smallStub(item!));
    expect(stub).toContain("changed on disk after this read; read it again");
  });

  it("sends a large read with the disk's note and says so in its replacement", () => {
    const entries = session([{ path: "big.ts", text: lines(900, "big") }]);
    const { plan, out } = pass(entries, ["t0"]);
    expect(plan.candidates[0]?.changedOnDisk).toBe(true);
    expect(plan.requests.every((r) => r.state.superseded === CHANGED_ON_DISK)).toBe(true);
    const text = out.drafts[0]?.replacement?.content[0]?.text ?? "";
    expect(text).toMatch(/^\[context-guard\] Removed the output of read big\.ts .*The file changed on disk/);
  });

  it("leaves a large read's request and replacement as they were when the file is unchanged", () => {
    const entries = session([{ path: "big.ts", text: lines(900, "big") }]);
    const { plan, out } = pass(entries, []);
    expect(plan.candidates[0]?.changedOnDisk).toBeUndefined();
    expect(plan.requests.some((r) => "superseded" in r.state)).toBe(false);
    expect(out.drafts[0]?.replacement?.content[0]?.text).not.toContain("changed on disk");
  });
});

describe("an earlier run's read whose file changed on disk", () => {
  const text = Array.from({ length: 60 }, (_, i) => `old line ${i + 1}`).join("\n");
  const read = toolCall("r0", "read", { path: "src/a.ts" });
  const later = toolCall("b1", "bash", { command: "echo hi" });
  const entries: SnapEntry[] = [
    userEntry("u1", "read src/a.ts"),
    assistantEntry("a1", "", [read]),
    callResultEntry("t0", read, text, { timestamp: READ_AT }),
    assistantEntry("z1", "it holds old lines"),
    userEntry("u2", "say hi"),
    assistantEntry("a2", "", [later]),
    callResultEntry("t1", later, "hi"),
    assistantEntry("z2", "hi"),
  ];

  it("is replaced by its stub without a request, and recorded as changed on disk", () => {
    const plan = planRunEnd(entries, UNGATED, undefined, (reads) => {
      expect(reads.map((r) => r.entryId)).toEqual(["t0"]);
      return new Set(["t0"]);
    }) as Extract<PassPlan, { status: "run" }>;
    expect(plan.status).toBe("run");
    expect(plan.requests).toEqual([]);
    const out = finishPass({ plan, entries, texts: [], outcomes: [], config: UNGATED });
    const stub = out.drafts.find((d) => d.targetId === "t0")?.replacement?.content[0]?.text;
    expect(stub).toBe(
      `[context-guard] Omitted the output of read src/a.ts (${text.length} chars): the file changed on disk after this read; read it again for its current content. Old output: recall({"entryId":"t0"}).`,
    );
    expect(out.results).toContainEqual(
      expect.objectContaining({ entryId: "t0", kind: "small", outcome: "removed", reason: "changed-on-disk" }),
    );
  });

  it("waits, with the cache gate on and a warm cache, until its rewrite pays", () => {
    const gated = { ...DEFAULT_CONFIG, exchangeBreakEven: true };
    const view = { family: "anthropic" as const, sinceRequestMs: 1000 };
    const plan = planRunEnd(entries, gated, view, () => new Set(["t0"])) as Extract<PassPlan, { status: "run" }>;
    expect(plan.staleReads.map((r) => r.entryId)).toEqual(["t0"]);
    const out = finishPass({ plan, entries, texts: [], outcomes: [], config: gated, family: "anthropic" });
    expect(out.drafts).toEqual([]);
    expect(out.results.some((r) => r.entryId === "t0")).toBe(false);
  });

  it("stays when the user pinned it, whatever the disk says", () => {
    const pinned = [...entries, hiddenEntry("p", "custom", { customType: PIN_TYPE, data: pinData("pin", ["t0"]) })];
    expect(planRunEnd(pinned, UNGATED, undefined, () => new Set(["t0"]))).toEqual({
      status: "skip",
      reason: "nothing to judge",
    });
  });

  it("stays when the disk says it is unchanged", () => {
    expect(planRunEnd(entries, UNGATED, undefined, () => new Set())).toEqual({
      status: "skip",
      reason: "nothing to judge",
    });
  });
});
