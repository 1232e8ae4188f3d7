// PassPipeline: the pass as the extension, the replay and the bench all run it. Here on the inline pool
// backend with a real Pi SessionManager projection and a scripted classifier on a fake clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome } from "../../../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { cacheFamily, PassPipeline, sinceLastRequest } from "../../../../src/main/pass/pass-pipeline.ts";
import type { ProjectedLike } from "../../../../src/main/pass/snapshot.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { dropAll } from "../../../kit/answers.ts";
import { grepRunSession } from "../../../kit/grep-run.ts";

let runner: TaskRunner;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "inline" });
});
afterAll(async () => {
  await runner.destroy();
});

/** A finished run with one large grep output: a run-end pass has something to ask about. */
function session(): ProjectedLike[] {
  return grepRunSession().buildSessionProjection().entries as unknown as ProjectedLike[];
}

describe("PassPipeline.pass", () => {
  it("runs the pass on Pi's projection and returns drafts Pi can apply", async () => {
    const guard = new PassPipeline({ config: DEFAULT_CONFIG, runner });
    const { result, opened } = await guard.pass({
      phase: "run-end",
      context: session(),
      classify: dropAll,
      modelRef: "t/t",
      family: "other",
    });
    expect(opened).toBeUndefined();
    expect(result.status).toBe("done");
    if (result.status !== "done") return;
    expect(result.edits.length).toBe(1);
    expect(result.classifier.answered).toBeGreaterThan(0);
  });

  it("stops asking a classifier that failed two passes in a row, and asks again after the pause", async () => {
    let now = 1_000_000;
    let calls = 0;
    const failing: ClassifyFn = async (): Promise<ClassifierOutcome> => {
      calls++;
      return { status: "error", error: "System One API error (500)" };
    };
    const guard = new PassPipeline({ config: DEFAULT_CONFIG, runner, clock: () => now });
    const pass = () =>
      guard.pass({ phase: "run-end", context: session(), classify: failing, modelRef: "t/t", family: "other" });
    expect((await pass()).opened).toBeUndefined();
    const second = await pass();
    expect(second.opened).toMatchObject({ kind: "open", failures: 2, until: now + 30_000 });
    expect(guard.breakerState().kind).toBe("open");
    const before = calls;
    const paused = await pass();
    expect(calls).toBe(before);
    // Without a classifier the pass has nothing to do (no old images here).
    expect(paused.result.status).toBe("skipped");
    now += 30_000;
    await pass();
    expect(calls).toBeGreaterThan(before);
  });
});

describe("cacheFamily", () => {
  it("maps the main model (or the message it wrote) to how its cache reacts to an edit", () => {
    expect(cacheFamily({ api: "anthropic-messages", provider: "anthropic" })).toBe("anthropic");
    expect(cacheFamily({ api: "openai-codex-responses" })).toBe("openai-codex");
    expect(cacheFamily({ provider: "openai-codex", api: "openai-responses" })).toBe("openai-codex");
    expect(cacheFamily({ api: "openai-completions", provider: "openrouter" })).toBe("other");
    expect(cacheFamily(undefined)).toBe("other");
  });
});

describe("sinceLastRequest", () => {
  it("measures from the newest assistant message, so a long tool run finds the cache cold", () => {
    const context = session();
    const stamps = context.flatMap((e) =>
      (e.messages as Array<{ role?: string; timestamp?: number }>)
        .filter((m) => m.role === "assistant")
        .map((m) => m.timestamp as number),
    );
    const newest = Math.max(...stamps);
    expect(sinceLastRequest(context, newest + 7 * 60_000).sinceRequestMs).toBe(7 * 60_000);
    expect(sinceLastRequest(context, newest - 5).sinceRequestMs).toBe(0);
  });

  it("knows nothing without an assistant message", () => {
    expect(sinceLastRequest([], Date.now())).toEqual({});
  });
});
