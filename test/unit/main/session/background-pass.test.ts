import { describe, expect, it } from "vitest";
import type { ContextEditDraft, GuardRecord, RecordResult } from "../../../../src/core/shared/types.ts";
import { type Judged, revalidate } from "../../../../src/main/pass/revalidate.ts";
import type { ProjectedLike } from "../../../../src/main/pass/snapshot.ts";
import { setCallbackReporter } from "../../../../src/main/platform/callbacks.ts";
import { BackgroundSlot } from "../../../../src/main/session/background-pass.ts";

function output(id: string, text: string): ProjectedLike {
  const message = { role: "toolResult", toolCallId: `c-${id}`, content: [{ type: "text", text }] };
  return { sourceEntry: { id, type: "message", message }, messages: [message] };
}

/** The same entry shown with another edit's content. */
function editedAs(entry: ProjectedLike, text: string): ProjectedLike {
  const raw = entry.sourceEntry.message as Record<string, unknown>;
  return { sourceEntry: entry.sourceEntry, messages: [{ ...raw, content: [{ type: "text", text }] }] };
}

const stub = (targetId: string): ContextEditDraft => ({
  type: "context_edit",
  targetId,
  replacement: { content: [{ type: "text", text: "[context-guard] short" }] },
});

function result(entryId: string, before: number): RecordResult {
  return {
    kind: "large",
    entryId,
    label: entryId,
    outcome: "distilled",
    reason: "chunks",
    beforeChars: before,
    afterChars: 21,
    jev: [],
  };
}

function judged(ids: string[], size: number): Judged {
  const results = ids.map((id) => result(id, size));
  const record: GuardRecord = {
    v: 1,
    phase: "mid-run",
    model: "m",
    savedChars: results.reduce((n, r) => n + r.beforeChars - r.afterChars, 0),
    requests: 1,
    inputTokens: 0,
    costUsd: 0,
    ms: 1,
    timedOut: false,
    results,
  };
  return { edits: ids.map(stub), record };
}

const long = "x".repeat(500);

describe("revalidate", () => {
  it("keeps drafts whose targets show what was judged, on a context that grew meanwhile", async () => {
    const then = [output("a", long), output("b", long)];
    const now = [...then, output("c", long)];
    const landed = await revalidate(judged(["a", "b"], 500), then, now);
    expect(landed.edits.map((e) => e.targetId)).toEqual(["a", "b"]);
    expect(landed.dropped).toEqual([]);
    expect(landed.record.savedChars).toBe(2 * (500 - 21));
  });

  it("drops a target edited meanwhile and marks its result kept, the rest lands", async () => {
    const then = [output("a", long), output("b", long)];
    const now = [editedAs(then[0] as ProjectedLike, "someone else's"), then[1] as ProjectedLike];
    const landed = await revalidate(judged(["a", "b"], 500), then, now);
    expect(landed.edits.map((e) => e.targetId)).toEqual(["b"]);
    expect(landed.dropped).toEqual([{ targetId: "a", why: "changed since it was judged" }]);
    const a = landed.record.results.find((r) => r.entryId === "a");
    expect(a).toMatchObject({ outcome: "kept", reason: "rejected: changed since it was judged", afterChars: 500 });
    expect(landed.record.savedChars).toBe(500 - 21);
    expect(landed.recordDraft.data).toEqual(landed.record);
  });

  it("drops a target that left the context (a compaction, another branch)", async () => {
    const then = [output("a", long), output("b", long)];
    const landed = await revalidate(judged(["a", "b"], 500), then, [then[1] as ProjectedLike]);
    expect(landed.edits.map((e) => e.targetId)).toEqual(["b"]);
    expect(landed.dropped[0]?.why).toBe("target is not in the context");
  });
});

describe("BackgroundSlot", () => {
  it("runs one at a time and lands only once finished, or when waited for", async () => {
    const checkpoint = new BackgroundSlot();
    const context = [output("a", long)];
    let finish: (j: Judged) => void = () => undefined;
    const started = checkpoint.start(context, (job) => {
      job.begin();
      job.asking();
      return new Promise<Judged>((resolve) => {
        finish = resolve;
      });
    });
    expect(started).toBe(true);
    expect(checkpoint.start(context, async () => undefined)).toBe(false);
    await Promise.resolve();
    expect(await checkpoint.land(context, { wait: false })).toBeUndefined();
    expect(checkpoint.pending).toBe(true);
    const waited = checkpoint.land(context, { wait: true });
    finish(judged(["a"], 500));
    expect((await waited)?.edits.map((e) => e.targetId)).toEqual(["a"]);
    expect(checkpoint.pending).toBe(false);
  });

  it("lands nothing of a checkpoint judged on a branch the session has left", async () => {
    const checkpoint = new BackgroundSlot();
    const judgedOn = [output("a", long), output("run3", long)];
    checkpoint.start(judgedOn, async (job) => {
      job.begin();
      return judged(["a"], 500);
    });
    // /tree to before run 3: "a" is still on the branch, the context the checkpoint judged is not.
    const now = [output("a", long)];
    const landed = await checkpoint.land(now, { wait: true, onBranch: (id) => id === "a" });
    expect(landed?.offBranch).toBe(true);
    expect(landed?.edits).toEqual([]);
    expect(landed?.record.results.every((r) => r.outcome === "kept" && r.reason.includes("another branch"))).toBe(true);
    expect(checkpoint.pending).toBe(false);
  });

  it("judges the newest boundary when it had not begun yet", async () => {
    const checkpoint = new BackgroundSlot();
    let go: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      go = resolve;
    });
    let seen: readonly ProjectedLike[] = [];
    checkpoint.start([output("a", long)], async (job) => {
      await ready;
      seen = job.begin();
      return undefined;
    });
    const newer = [output("a", long), output("b", long)];
    checkpoint.start(newer, async () => undefined);
    go();
    expect(await checkpoint.land(newer, { wait: true })).toBeUndefined();
    expect(seen).toBe(newer);
    expect(checkpoint.pending).toBe(false);
  });

  it("says when a planning checkpoint has its plan: once it asks, or once it skips", async () => {
    const checkpoint = new BackgroundSlot();
    let ask: () => void = () => undefined;
    let finish: () => void = () => undefined;
    checkpoint.start([output("a", long)], async (job) => {
      job.begin();
      await new Promise<void>((r) => {
        ask = r;
      });
      job.asking();
      await new Promise<void>((r) => {
        finish = r;
      });
      return undefined;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(checkpoint.planning).toBe(true);
    let planned = false;
    const waiting = checkpoint.planned().then(() => {
      planned = true;
    });
    await Promise.resolve();
    expect(planned).toBe(false);
    ask();
    await waiting;
    // Asking: not waited for any more, and still pending.
    expect(checkpoint.planning).toBe(false);
    expect(await checkpoint.land([output("a", long)], { wait: false })).toBeUndefined();
    expect(checkpoint.pending).toBe(true);
    finish();
    expect(await checkpoint.land([output("a", long)], { wait: true })).toBeUndefined();

    // One that skips while planning is planned when it ends.
    checkpoint.start([output("a", long)], async (job) => {
      job.begin();
      return undefined;
    });
    await checkpoint.planned();
    expect(await checkpoint.land([output("a", long)], { wait: false })).toBeUndefined();
    expect(checkpoint.pending).toBe(false);
  });

  it("lands nothing from a run that failed, and frees the slot", async () => {
    // The failure is reported (captured here, not printed).
    const reported: string[] = [];
    setCallbackReporter((message) => reported.push(message));
    try {
      const checkpoint = new BackgroundSlot();
      checkpoint.start([output("a", long)], async () => {
        throw new Error("worker gone");
      });
      expect(await checkpoint.land([output("a", long)], { wait: true })).toBeUndefined();
      expect(checkpoint.start([output("a", long)], async () => undefined)).toBe(true);
      expect(reported).toEqual(["internal error in checkpoint, ignored: worker gone"]);
    } finally {
      setCallbackReporter((message) => process.stderr.write(`context-guard: ${message}\n`));
    }
  });
});

describe("revalidate and the user's pins", () => {
  const pin = (id: string, ids: string[]): ProjectedLike => ({
    sourceEntry: { id, type: "custom", customType: "context-guard-pin", data: { v: 1, action: "pin", ids } },
    messages: [],
  });

  it("drops an edit of an entry pinned since it was judged, and the whole exchange holding one", async () => {
    const then = [output("a", long), output("b", long)];
    const now = [...then, pin("p", ["a"])];
    const landed = await revalidate(judged(["a", "b"], 500), then, now);
    expect(landed.edits.map((e) => e.targetId)).toEqual(["b"]);
    expect(landed.record.results[0]).toMatchObject({ outcome: "kept", reason: "rejected: pinned since it was judged" });

    // An exchange: the prompt's stub and the omission of its pinned entry both stay out.
    const prompt = {
      sourceEntry: { id: "u", type: "message", message: { role: "user", content: long } },
      messages: [{ role: "user", content: long }],
    } as ProjectedLike;
    const exchange: Judged = {
      edits: [stub("u"), { type: "context_edit", targetId: "a", replacement: null }],
      record: {
        ...judged([], 0).record,
        results: [{ ...result("u", 1000), kind: "exchange", outcome: "removed", reason: "unrelated", omitted: ["a"] }],
      },
    };
    const ex = await revalidate(exchange, [prompt, ...then], [prompt, ...then, pin("p", ["a"])]);
    expect(ex.edits).toEqual([]);
  });
});

describe("the rest of a handed-over pass in the slot", () => {
  it("holds the slot until it lands, is not waited for as planning, and is re-validated", async () => {
    const slot = new BackgroundSlot();
    const then = [output("a", long), output("b", long)];
    let finish!: (j: Judged) => void;
    slot.adopt(
      then,
      new Promise<Judged>((r) => {
        finish = r;
      }),
    );
    expect(slot.pending).toBe(true);
    expect(slot.planning).toBe(false);
    // No checkpoint starts beside it.
    expect(slot.start(then, async () => undefined)).toBe(false);
    expect(await slot.land(then, { wait: false })).toBeUndefined();
    finish(judged(["a", "b"], 500));
    const now = [then[0] as ProjectedLike, editedAs(then[1] as ProjectedLike, "edited meanwhile")];
    const landed = await slot.land(now, { wait: true });
    expect(landed?.edits.map((e) => e.targetId)).toEqual(["a"]);
    expect(landed?.record.results.find((r) => r.entryId === "b")?.outcome).toBe("kept");
    expect(slot.pending).toBe(false);
  });
});
