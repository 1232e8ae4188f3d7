// A run end that finds a pass pending has its own pass follow it (issue 41): the follower starts only once
// the pending one has ended, is told what that one judged, and each lands at the first boundary after it
// has ended.
import { describe, expect, it } from "vitest";
import { landingOf } from "../../../../src/core/boundary/landed-items.ts";
import type { ContextEditDraft, GuardRecord, RecordResult } from "../../../../src/core/shared/types.ts";
import type { Judged } from "../../../../src/main/pass/revalidate.ts";
import type { ProjectedLike } from "../../../../src/main/pass/snapshot.ts";
import { BackgroundSlot } from "../../../../src/main/session/background-slot.ts";

function output(id: string): ProjectedLike {
  const message = { role: "toolResult", toolCallId: `c-${id}`, content: [{ type: "text", text: "x".repeat(500) }] };
  return { sourceEntry: { id, type: "message", message }, messages: [message] };
}

const stub = (targetId: string): ContextEditDraft => ({
  type: "context_edit",
  targetId,
  replacement: { content: [{ type: "text", text: "[context-guard] short" }] },
});

function judged(phase: GuardRecord["phase"], edited: string[], kept: string[] = []): Judged {
  const result = (entryId: string, outcome: RecordResult["outcome"]): RecordResult => ({
    kind: "large",
    entryId,
    label: entryId,
    outcome,
    reason: outcome === "kept" ? "not-worth" : "chunks",
    beforeChars: 500,
    afterChars: outcome === "kept" ? 500 : 21,
    jev: [],
  });
  const results = [...edited.map((id) => result(id, "distilled")), ...kept.map((id) => result(id, "kept"))];
  const record: GuardRecord = {
    v: 1,
    phase,
    model: "m",
    savedChars: edited.length * 479,
    requests: 1,
    inputTokens: 0,
    costUsd: 0,
    ms: 1,
    timedOut: false,
    results,
  };
  return { edits: edited.map(stub), record };
}

/** A pass that ends when `end` is called. */
function gated(): { run: Promise<void>; end: () => void } {
  let end: () => void = () => undefined;
  const run = new Promise<void>((r) => {
    end = r;
  });
  return { run, end };
}

const context = [output("a"), output("b"), output("c")];

describe("BackgroundSlot.follow", () => {
  it("starts the follower once the pending pass has ended, and lands both at the boundary after", async () => {
    const slot = new BackgroundSlot();
    const first = gated();
    slot.start(context, async (job) => {
      job.begin();
      await first.run;
      return judged("mid-run", ["a"], ["b"]);
    });
    let told: Judged | undefined;
    let followed = false;
    const second = gated();
    expect(
      slot.follow(context, async (job, landed) => {
        followed = true;
        told = landed;
        job.begin();
        await second.run;
        return judged("run-end", ["b", "c"]);
      }),
    ).toBe(true);
    // One waits at most.
    expect(slot.follow(context, async () => undefined)).toBe(false);
    await Promise.resolve();
    expect(followed).toBe(false);
    first.end();
    await slot.finished();
    await Promise.resolve();
    expect(followed).toBe(true);
    expect(told?.edits.map((e) => e.targetId)).toEqual(["a"]);
    // The first has ended, the follower asks: the first lands alone and the follower stays pending.
    const landedFirst = await slot.land(context, { wait: false });
    expect(landedFirst?.edits.map((e) => e.targetId)).toEqual(["a"]);
    expect(slot.pending).toBe(true);
    expect(await slot.land(context, { wait: false })).toBeUndefined();
    second.end();
    await slot.finished();
    expect(slot.ready?.record.phase).toBe("run-end");
    const landedSecond = await slot.land(context, { wait: false });
    expect(landedSecond?.edits.map((e) => e.targetId)).toEqual(["b", "c"]);
    expect(slot.pending).toBe(false);
  });

  it("takes the slot at once from a pending pass that ends with nothing to land", async () => {
    const slot = new BackgroundSlot();
    const first = gated();
    slot.start(context, async (job) => {
      job.begin();
      await first.run;
      return undefined;
    });
    slot.follow(context, async (job, landed) => {
      job.begin();
      expect(landed).toBeUndefined();
      return judged("run-end", ["a"]);
    });
    first.end();
    await slot.finished();
    await slot.finished();
    const landed = await slot.land(context, { wait: false });
    expect(landed?.edits.map((e) => e.targetId)).toEqual(["a"]);
    expect(slot.pending).toBe(false);
  });

  it("has nothing to follow when no pass is pending, and forgets a follower at shutdown", async () => {
    const slot = new BackgroundSlot();
    expect(slot.follow(context, async () => judged("run-end", ["a"]))).toBe(false);
    const first = gated();
    slot.start(context, async (job) => {
      job.begin();
      await first.run;
      return judged("mid-run", ["a"]);
    });
    let followed = false;
    slot.follow(context, async () => {
      followed = true;
      return undefined;
    });
    slot.drop();
    first.end();
    await Promise.resolve();
    await Promise.resolve();
    expect(followed).toBe(false);
    expect(slot.pending).toBe(false);
  });
});

describe("landingOf", () => {
  it("leaves a checkpoint's kept outputs to the run end, and everything a run-end pass judged", () => {
    const landing = landingOf([judged("mid-run", ["a"], ["b"]), judged("run-end", ["c"], ["d"])]);
    expect(landing.judged.sort()).toEqual(["a", "c", "d"]);
    expect(landing.edited).toEqual(["a", "c"]);
  });
});
