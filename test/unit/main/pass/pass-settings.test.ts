// The settings travel to the pass worker once per session and again only when they change: plans and
// finishes name them by version instead of carrying the whole config. A worker that lost them (a
// replaced thread) is sent them again, and the pass still runs.
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { PassWorker } from "../../../../src/main/pass/pass-worker.ts";
import { runPass } from "../../../../src/main/pass/run-pass.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import type { PassMessage } from "../../../../src/workers/pass/protocol.ts";
import { dropAll } from "../../../kit/answers.ts";
import { grepRun } from "../../../kit/snap.ts";

const runners: TaskRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
});

/** An inline runner that keeps every pass message it is handed. */
async function recording(): Promise<{ runner: TaskRunner; sent: PassMessage[] }> {
  const inner = await createTaskRunner({ backend: "inline" });
  runners.push(inner);
  const sent: PassMessage[] = [];
  const runner: TaskRunner = {
    backend: inner.backend,
    destroy: () => inner.destroy(),
    run: (name, input, options) => {
      if (name === "pass") sent.push(structuredClone(input as PassMessage));
      return inner.run(name, input, options);
    },
  };
  return { runner, sent };
}

const session = (tag: string, outputs: number) => grepRun(tag, outputs);

const kinds = (sent: PassMessage[]) => sent.map((m) => m.kind);

describe("the pass worker's settings", () => {
  it("go once per session and again when they change; plans and finishes carry only their version", async () => {
    const { runner, sent } = await recording();
    const worker = new PassWorker(runner);
    const entries = session("s", 2);
    const pass = (config = DEFAULT_CONFIG) =>
      runPass(entries, { worker, classify: dropAll, config, modelRef: "t/t" }, { phase: "run-end" });
    expect((await pass()).status).toBe("done");
    expect((await pass({ ...DEFAULT_CONFIG })).status).toBe("done");
    const settings = sent.filter((m) => m.kind === "settings");
    expect(settings).toHaveLength(1);
    expect(settings[0]).toMatchObject({ client: worker.mirror.client, settings: DEFAULT_CONFIG });
    const plans = sent.filter((m) => m.kind === "plan");
    expect(plans.map((m) => m.settings)).toEqual([1, 1]);
    // No plan or finish carries any of the settings (the list of excluded tools is one of them).
    for (const m of sent.filter((m) => m.kind === "plan" || m.kind === "finish")) {
      expect(m).not.toHaveProperty("config");
      expect(JSON.stringify(m)).not.toContain("excludeTools");
    }
    sent.length = 0;
    const changed = { ...DEFAULT_CONFIG, maxKeepRatio: 0.5 };
    expect((await pass(changed)).status).toBe("done");
    expect(kinds(sent).slice(0, 2)).toEqual(["settings", "plan"]);
    expect(sent[0]).toMatchObject({ version: 2, settings: changed });
    expect(sent[1]).toMatchObject({ settings: 2 });
  });

  it("are sent again to a worker that lost them, and the pass runs", async () => {
    const { runner, sent } = await recording();
    const worker = new PassWorker(runner);
    const entries = session("r", 2);
    const pass = () =>
      runPass(entries, { worker, classify: dropAll, config: DEFAULT_CONFIG, modelRef: "t/t" }, { phase: "run-end" });
    expect((await pass()).status).toBe("done");
    // The worker forgets the session behind this side's back, as a replaced thread does.
    await runner.run("pass", { kind: "release", client: worker.mirror.client });
    sent.length = 0;
    const again = await pass();
    expect(again.status).toBe("done");
    expect(again.status === "done" && again.edits).toHaveLength(2);
    // The plan is refused for its settings, then for its store, then runs with both sent again.
    expect(kinds(sent).filter((k) => k === "settings" || k === "plan")).toEqual(["plan", "settings", "plan", "plan"]);
  });
});
