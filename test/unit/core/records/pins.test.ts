// What the user restored or pinned is read back from the branch, and every kind of item a pass plans
// (large and small outputs, earlier runs' retries, old exchanges, old images, checkpoints) leaves it alone.
import { describe, expect, it } from "vitest";
import { planCheckpoint, planRunEnd } from "../../../../src/core/distill/plan.ts";
import {
  PIN_TYPE,
  pendingRestores,
  pinData,
  readPinData,
  readPins,
  unpinned,
} from "../../../../src/core/records/pins.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ImageHead, SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, hiddenEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const pin = (id: string, action: "pin" | "restore", ids: string[]): SnapEntry =>
  hiddenEntry(id, "custom", { customType: PIN_TYPE, data: pinData(action, ids) });

/** A real PNG header, big enough for its stub to be worth it. */
function pngHead(): ImageHead {
  const head = Buffer.alloc(25);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(head, 0);
  return { mimeType: "image/png", head: head.toString("base64") };
}

describe("readPins", () => {
  it("collects pinned and restored entries, skipping damaged requests", () => {
    const pins = readPins([
      pin("p1", "pin", ["a"]),
      pin("p2", "restore", ["b", "c"]),
      hiddenEntry("x", "custom", { customType: PIN_TYPE, data: { action: "drop", ids: ["d"] } }),
      hiddenEntry("y", "custom", { customType: PIN_TYPE, data: { action: "pin", ids: "e" } }),
      hiddenEntry("z", "custom", { customType: "other", data: pinData("pin", ["f"]) }),
    ]);
    expect([...pins.pinned].sort()).toEqual(["a", "b", "c"]);
    expect([...pins.restored].sort()).toEqual(["b", "c"]);
    expect(unpinned(pins, "f", "g")).toBe(true);
    expect(unpinned(pins, "f", "c")).toBe(false);
    expect(readPinData({ type: "custom", customType: PIN_TYPE, data: { action: "pin", ids: [3, ""] } })).toBe(
      undefined,
    );
  });
});

describe("pendingRestores", () => {
  it("lists restored targets until a later context_edit targets them", () => {
    const branch = [
      { type: "context_edit", targetId: "a" },
      { type: "custom", customType: PIN_TYPE, data: pinData("restore", ["a", "b"]) },
      { type: "custom", customType: PIN_TYPE, data: pinData("pin", ["c"]) },
    ];
    expect(pendingRestores(branch)).toEqual(["a", "b"]);
    expect(pendingRestores([...branch, { type: "context_edit", targetId: "a" }])).toEqual(["b"]);
    // An edit before the request does not count.
    expect(pendingRestores(branch.slice(1))).toEqual(["a", "b"]);
  });
});

// An earlier exchange (omittable), an old image, then a run with one large and one small output.
function session(): SnapEntry[] {
  const grep = Array.from({ length: 400 }, (_, i) => `src/f${i % 20}.ts:${i}:cold() // ${"x".repeat(30)}`).join("\n");
  const img = toolCall("ci", "screenshot", {});
  const c1 = toolCall("c1", "bash", { command: "rg cold" });
  const c2 = toolCall("c2", "bash", { command: "ls" });
  return [
    userEntry("u0", "an old task"),
    assistantEntry("a0", "y".repeat(3000)),
    userEntry("u1", "look at the screen"),
    assistantEntry("a1", "", [img]),
    toolResultEntry("ti", "ci", "screenshot", "shot", { images: 1, imageHeads: [pngHead()] }),
    assistantEntry("a1z", "seen"),
    userEntry("u2", "more"),
    assistantEntry("a2", "z".repeat(100)),
    userEntry("u3", "yet more"),
    assistantEntry("a3", "w".repeat(100)),
    userEntry("u4", "where is cold?"),
    assistantEntry("a4", "", [c1, c2]),
    toolResultEntry("tl", "c1", "bash", grep),
    toolResultEntry("ts", "c2", "bash", "file ".repeat(200)),
    assistantEntry("a4z", "cold is everywhere"),
  ];
}

const CONFIG = { ...DEFAULT_CONFIG, exchangeBreakEven: false, imageKeepTurns: 1 };

function planned(entries: SnapEntry[]) {
  const plan = planRunEnd(entries, CONFIG);
  if (plan.status !== "run") return { large: [], small: [], exchanges: [], images: [] };
  return {
    large: plan.candidates.map((c) => c.entryId),
    small: plan.small.map((i) => i.entryId),
    exchanges: plan.exchanges.map((x) => x.promptId),
    images: plan.images.map((i) => i.entryId),
  };
}

describe("planning leaves pinned entries alone", () => {
  it("plans every kind of item when nothing is pinned", () => {
    expect(planned(session())).toEqual({ large: ["tl"], small: ["ts"], exchanges: ["u0", "u1"], images: ["ti"] });
  });

  it("drops a pinned output, a pinned image and an exchange with any pinned entry", () => {
    const entries = [...session(), pin("p", "pin", ["tl"]), pin("q", "pin", ["ts"]), pin("r", "pin", ["ti"])];
    // The image's exchange holds a pinned entry too.
    expect(planned(entries)).toEqual({ large: [], small: [], exchanges: ["u0"], images: [] });
    expect(planned([...session(), pin("p", "pin", ["a0"])]).exchanges).toEqual(["u1"]);
    expect(planned([...session(), pin("p", "restore", ["u0", "a0"])]).exchanges).toEqual(["u1"]);
  });

  it("does not ask again about a pinned output of an earlier run", () => {
    const entries = [
      ...session(),
      recordEntry("rec", { v: 1, phase: "run-end", results: [{ kind: "large", entryId: "tl", reason: "timeout" }] }),
      userEntry("u5", "next"),
      assistantEntry("a5", "ok"),
    ];
    expect(planned(entries).large).toEqual(["tl"]);
    expect(planned([...entries.slice(0, -2), pin("p", "pin", ["tl"]), ...entries.slice(-2)]).large).toEqual([]);
  });

  it("keeps pinned outputs out of a mid-run checkpoint", () => {
    const calls = Array.from({ length: 6 }, (_, i) => toolCall(`k${i}`, "bash", { command: `cmd ${i}` }));
    const run: SnapEntry[] = [userEntry("u", "go")];
    calls.forEach((c, i) => {
      run.push(assistantEntry(`a${i}`, "", [c]), toolResultEntry(`t${i}`, c.id, "bash", `${i}`.repeat(9000)));
    });
    const config = { ...DEFAULT_CONFIG, midRunBreakEven: false, midRunBatchChars: 9000 };
    const ids = (entries: SnapEntry[]) => {
      const plan = planCheckpoint(entries, config, { family: "other" });
      return plan.status === "run" ? plan.candidates.map((c) => c.entryId) : [];
    };
    expect(ids(run)).toEqual(["t0", "t1"]);
    expect(ids([...run, pin("p", "pin", ["t0"])])).toEqual(["t1"]);
  });
});

describe("planning beside a pass landing at the same boundary", () => {
  it("leaves what the landed pass judged alone, and counts its edits' rewrite as paid", () => {
    const landing = { judged: ["tl", "ts", "a0"], edited: ["tl"] };
    const plan = planRunEnd(session(), CONFIG, undefined, undefined, landing);
    expect(plan.status).toBe("run");
    if (plan.status !== "run") return;
    expect(plan.candidates.map((c) => c.entryId)).toEqual([]);
    expect(plan.small.map((i) => i.entryId)).toEqual([]);
    expect(plan.exchanges.map((x) => x.promptId)).toEqual(["u1"]);
    expect(plan.images.map((i) => i.entryId)).toEqual(["ti"]);
    expect(plan.paidEdits).toEqual(["tl"]);
    const plain = planRunEnd(session(), CONFIG);
    expect(plain.status === "run" && plain.paidEdits).toBeFalsy();
  });
});
