// The boundary machine driven alone on random event sequences, against the invariants the session relies
// on, and the cases those sequences reach only rarely, by hand.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { shown } from "../../../../src/core/boundary/boundary-state.ts";
import {
  type BoundaryEvent,
  type Effect,
  initial,
  type Machine,
  type Settings,
  step,
  turnEndDue,
} from "../../../../src/core/boundary/machine.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { REPO_ROOT } from "../../../kit/pi-agent-dir.ts";

const SETTINGS: Settings = { enabled: true, midRun: true, midRunWait: false, waitsWhole: false };

/** What the session does: each command becomes an event against the state it meets. */
type Command =
  | { kind: "turn-start" }
  | { kind: "tool-turn" }
  | { kind: "reply"; tools: boolean; recall: boolean }
  | { kind: "turn-end"; last: boolean; landed: boolean }
  | { kind: "run-end"; landed: boolean }
  | { kind: "begin"; which: "pending" | "second" }
  | { kind: "asking"; which: "pending" | "second" }
  | { kind: "end"; which: "pending" | "second"; drafts: boolean }
  | { kind: "land" }
  | { kind: "switch"; branch: number }
  | { kind: "prompt" }
  | { kind: "hold"; stoppable: boolean }
  | { kind: "release" }
  | { kind: "ask" }
  | { kind: "answered" }
  | { kind: "adopt" }
  | { kind: "restores"; pending: boolean }
  | { kind: "boundary-done"; recall: boolean }
  | { kind: "settings"; midRunWait: boolean; waitsWhole: boolean; enabled: boolean };

const which = fc.constantFrom("pending" as const, "second" as const);
/** Weighted toward the slot's life (a checkpoint starts, begins, ends, lands) so every path is reached often. */
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "turn-start" as const }) },
  { weight: 4, arbitrary: fc.constant({ kind: "tool-turn" as const }) },
  fc.record({ kind: fc.constant("reply" as const), tools: fc.boolean(), recall: fc.boolean() }),
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("turn-end" as const), last: fc.boolean(), landed: fc.boolean() }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("run-end" as const), landed: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("begin" as const), which }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("asking" as const), which }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("end" as const), which, drafts: fc.boolean() }) },
  { weight: 3, arbitrary: fc.constant({ kind: "land" as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("switch" as const), branch: fc.integer({ min: 0, max: 2 }) }) },
  fc.constant({ kind: "prompt" as const }),
  fc.record({ kind: fc.constant("hold" as const), stoppable: fc.boolean() }),
  fc.constant({ kind: "release" as const }),
  fc.constant({ kind: "ask" as const }),
  fc.constant({ kind: "answered" as const }),
  fc.constant({ kind: "adopt" as const }),
  fc.record({ kind: fc.constant("restores" as const), pending: fc.boolean() }),
  fc.record({ kind: fc.constant("boundary-done" as const), recall: fc.boolean() }),
  fc.record({
    kind: fc.constant("settings" as const),
    midRunWait: fc.boolean(),
    waitsWhole: fc.boolean(),
    enabled: fc.boolean(),
  }),
);

/** A run of the machine, with what the invariants need to know about each job. */
class Run {
  state: Machine = initial(SETTINGS);
  branch = 0;
  readonly effects: Effect[] = [];
  /** The branch each job judged on. */
  readonly judgedOn = new Map<number, number>();
  /** Jobs that ended with drafts, and how many records each got (landed, set aside or dropped). */
  readonly judged = new Set<number>();
  readonly records = new Map<number, number>();
  readonly started = new Set<number>();
  readonly ended = new Set<number>();

  send(event: BoundaryEvent): Effect[] {
    const before = this.state;
    const { state, effects } = step(before, event);
    this.state = state;
    if (event.type === "ended") this.ended.add(event.id);
    for (const effect of effects) this.check(before, event, effect);
    this.effects.push(...effects);
    this.invariants();
    return effects;
  }

  check(before: Machine, event: BoundaryEvent, effect: Effect): void {
    if (effect.type === "start") {
      this.started.add(effect.id);
      // A follower starts only once the pass it follows has ended.
      if (effect.after !== undefined) expect(this.ended.has(effect.after)).toBe(true);
    }
    if (effect.type === "adopted") {
      this.started.add(effect.id);
      this.judgedOn.set(effect.id, this.branch);
    }
    if (effect.type === "land" || effect.type === "set-aside") {
      // What lands was judged on the branch the session is on; what was judged elsewhere is set aside.
      const on = this.judgedOn.get(effect.id);
      if (effect.type === "land") expect(on === undefined || on === this.branch).toBe(true);
      else expect(on).not.toBe(this.branch);
      this.records.set(effect.id, (this.records.get(effect.id) ?? 0) + 1);
    }
    if (effect.type === "drop") {
      for (const id of effect.ids) this.records.set(id, (this.records.get(id) ?? 0) + 1);
    }
    // The boundary's own pass runs only when no pass is in flight behind the agent.
    if (effect.type === "judge") {
      const { pending, second } = this.state.slot;
      expect([pending, second].filter((j) => j && !j.ended)).toEqual([]);
    }
    // Only a wait that a prompt can stop is stopped, and only once.
    if (effect.type === "stop-hold") expect(event.type === "hold" || before.hold === "open").toBe(true);
  }

  invariants(): void {
    const m = this.state;
    // At most one pass in flight: the jobs that have not ended, and the boundary's own pass.
    const { pending, second, queued } = m.slot;
    const inFlight = [pending, second].filter((j) => j && !j.ended).length + (m.asking ? 1 : 0);
    expect(inFlight).toBeLessThanOrEqual(1);
    // A follower is started only behind a pass that ended with drafts, and one waits at most.
    if (second) expect(pending?.ended && pending.drafts).toBe(true);
    if (queued) expect(second).toBeUndefined();
    // The turn_end handler is registered exactly while the next turn_end has work, and a restore always has.
    expect(m.hook).toBe(turnEndDue(m));
    if (m.turn.restoresDue && !m.closed) expect(m.hook).toBe(true);
    if (m.closed) expect(shown(m)).toEqual({ kind: "closed" });
  }

  /** Carries out the commands' part of the shell: the events that follow an effect. */
  command(c: Command): void {
    const m = this.state;
    const job = (w: "pending" | "second") => m.slot[w];
    switch (c.kind) {
      case "turn-start":
        this.send({ type: "turn-start" });
        return;
      case "tool-turn":
        this.send({ type: "message", role: "toolResult" });
        return;
      case "reply":
        this.send({ type: "message", role: "assistant", callsTools: c.tools, callsRecall: c.recall });
        return;
      case "turn-end": {
        const effects = this.send({ type: "turn-end", last: c.last });
        if (!effects.some((e) => e.type === "collect")) return;
        const landed = this.land();
        const next = this.send({ type: "turn-end-landed", landed: landed && c.landed, last: c.last });
        // Checkpoints the settings await: the boundary lands what is pending within its budget first.
        if (!next.some((e) => e.type === "collect")) return;
        this.send({ type: "pass-landed", phase: "mid-run", landed: this.land() });
        return;
      }
      case "run-end": {
        const effects = this.send({ type: "pass", phase: "run-end" });
        if (!effects.some((e) => e.type === "collect")) return;
        const landed = this.land();
        this.send({ type: "pass-landed", phase: "run-end", landed: landed && c.landed });
        return;
      }
      case "begin": {
        const j = job(c.which);
        if (!j || j.begun) return;
        this.judgedOn.set(j.id, this.branch);
        this.send({ type: "begun", id: j.id, leaf: `b${this.branch}` });
        return;
      }
      case "asking": {
        const j = job(c.which);
        if (j) this.send({ type: "job-asking", id: j.id });
        return;
      }
      case "end": {
        const j = job(c.which);
        if (!j || j.ended) return;
        // A job that never began judged nothing.
        const drafts = c.drafts && j.begun;
        if (drafts) this.judged.add(j.id);
        this.send({ type: "ended", id: j.id, drafts });
        return;
      }
      case "land":
        this.land();
        return;
      case "switch":
        this.branch = c.branch;
        return;
      case "prompt":
        this.send({ type: "prompt" });
        return;
      case "hold":
        this.send({ type: "hold", stoppable: c.stoppable });
        return;
      case "release":
        this.send({ type: "release" });
        return;
      case "ask":
        this.send({ type: "ask", phase: "run-end" });
        return;
      case "answered":
        this.send({ type: "answered" });
        return;
      case "adopt":
        // A boundary adopts its own pass only once the slot has been landed or was empty.
        if (!m.asking || m.slot.pending) return;
        this.send({ type: "adopt", phase: "run-end", leaf: `b${this.branch}` });
        return;
      case "restores":
        this.send({ type: "restores", pending: c.pending });
        return;
      case "boundary-done":
        this.send({ type: "boundary-done", mayRecall: () => c.recall });
        return;
      case "settings":
        this.send({
          type: "settings",
          settings: { ...SETTINGS, midRunWait: c.midRunWait, waitsWhole: c.waitsWhole, enabled: c.enabled },
        });
        return;
    }
  }

  land(): boolean {
    const effects = this.send({ type: "land", onBranch: (leaf) => leaf === `b${this.branch}` });
    return effects.some((e) => e.type === "land");
  }
}

describe("the boundary machine on random sequences", () => {
  it("one pass in flight, lands only on its branch, the handler follows what is due, nothing judged goes unrecorded", () => {
    fc.assert(
      fc.property(fc.array(commandArb, { maxLength: 60, size: "max" }), (commands) => {
        const run = new Run();
        for (const c of commands) run.command(c);
        run.send({ type: "close" });
        // Every job that ended with drafts got exactly one record: landed, set aside, or dropped at close.
        for (const id of run.judged) expect(run.records.get(id)).toBe(1);
        // Every started job left the slot once: it ended without drafts, got its record, or was dropped.
        for (const id of run.started) expect(run.records.get(id) ?? 0).toBeLessThanOrEqual(1);
        expect(run.state.hook).toBe(false);
        // After close nothing happens.
        expect(step(run.state, { type: "turn-start" }).effects).toEqual([]);
      }),
      propertyParams(300),
    );
  });
});

describe("the boundary machine, case by case", () => {
  it("sets aside the drafts of a pass judged on a branch the session has left", () => {
    const run = new Run();
    for (const c of [
      { kind: "tool-turn" },
      { kind: "turn-start" },
      { kind: "begin", which: "pending" },
      { kind: "end", which: "pending", drafts: true },
      { kind: "switch", branch: 1 },
    ] as Command[]) {
      run.command(c);
    }
    expect(run.send({ type: "land", onBranch: (leaf) => leaf === "b1" })).toEqual([
      { type: "set-aside", id: 1, why: "judged on another branch" },
    ]);
  });

  it("a checkpoint starts at the turn after a tool turn, not after a turn_end that landed one", () => {
    const run = new Run();
    run.send({ type: "message", role: "toolResult" });
    expect(run.send({ type: "turn-start" })).toContainEqual({ type: "start", id: 1, phase: "mid-run" });
    run.send({ type: "begun", id: 1, leaf: "b0" });
    run.send({ type: "ended", id: 1, drafts: true });
    expect(run.send({ type: "turn-end", last: false })).toContainEqual({ type: "collect", wait: "no" });
    expect(run.send({ type: "land", onBranch: () => true })).toContainEqual({ type: "land", id: 1 });
    run.send({ type: "turn-end-landed", landed: true, last: false });
    run.send({ type: "message", role: "toolResult" });
    expect(run.send({ type: "turn-start" }).filter((e) => e.type === "start")).toEqual([]);
  });

  it("a checkpoint that has not begun judges the newer context instead of a second one starting", () => {
    const run = new Run();
    run.send({ type: "message", role: "toolResult" });
    run.send({ type: "turn-start" });
    run.send({ type: "turn-end", last: false });
    run.send({ type: "land", onBranch: () => true });
    expect(run.send({ type: "turn-end-landed", landed: false, last: false })).toContainEqual({
      type: "retarget",
      id: 1,
    });
  });

  it("a run end that finds the slot taken queues its pass, which starts once the pending one has ended", () => {
    const run = new Run();
    run.send({ type: "message", role: "toolResult" });
    run.send({ type: "turn-start" });
    run.send({ type: "begun", id: 1, leaf: "b0" });
    expect(run.send({ type: "pass", phase: "run-end" })).toContainEqual({ type: "collect", wait: "budget" });
    run.send({ type: "land", onBranch: () => true });
    expect(run.send({ type: "pass-landed", phase: "run-end", landed: false })).toEqual([
      { type: "queue", id: 2, after: 1 },
    ]);
    // A second run end finds one waiting already: it starts none.
    expect(run.send({ type: "pass-landed", phase: "run-end", landed: false })).toEqual([]);
    expect(run.send({ type: "ended", id: 1, drafts: true })).toContainEqual({
      type: "start",
      id: 2,
      phase: "run-end",
      after: 1,
    });
    expect(run.state.slot.second?.id).toBe(2);
    // The first lands; the follower takes the slot until it lands at a later boundary.
    expect(run.send({ type: "land", onBranch: () => true })).toEqual([{ type: "land", id: 1 }]);
    expect(run.state.slot.pending?.id).toBe(2);
  });

  it("a prompt stops a boundary that waits, once, and a prompt queued before the wait stops it from the start", () => {
    const run = new Run();
    run.send({ type: "hold", stoppable: true });
    expect(run.send({ type: "prompt" })).toEqual([{ type: "stop-hold" }, { type: "draw" }]);
    expect(run.send({ type: "prompt" })).toEqual([]);
    expect(shown(run.state)).toEqual({ kind: "idle", handingOver: true });
    expect(run.send({ type: "release" })).toEqual([{ type: "draw" }]);
    expect(run.send({ type: "hold", stoppable: true })).toEqual([{ type: "stop-hold" }]);
    run.send({ type: "release" });
    run.send({ type: "turn-start" });
    expect(run.send({ type: "hold", stoppable: true })).toEqual([]);
  });

  it("the boundary's pass goes behind the agent and shows as asking there", () => {
    const run = new Run();
    run.send({ type: "ask", phase: "run-end" });
    expect(shown(run.state)).toMatchObject({ kind: "asking", phase: "run-end" });
    expect(run.send({ type: "adopt", phase: "run-end", leaf: "b0" })).toEqual([{ type: "adopted", id: 1 }]);
    expect(shown(run.state)).toMatchObject({ kind: "background", phase: "run-end", asking: true });
    run.send({ type: "quiet", id: 1 });
    expect(shown(run.state)).toMatchObject({ kind: "background", asking: false });
  });

  it("the run's last turn_end waits for the pending pass only when the run end waits whole", () => {
    const run = new Run();
    run.send({ type: "settings", settings: { ...SETTINGS, waitsWhole: true } });
    run.send({ type: "message", role: "toolResult" });
    run.send({ type: "turn-start" });
    run.send({ type: "message", role: "assistant", callsTools: false });
    expect(run.state.hook).toBe(true);
    expect(run.send({ type: "turn-end", last: true })).toContainEqual({ type: "collect", wait: "ended" });
  });
});

describe("the design's account of the machine", () => {
  it("names every effect the machine has, in its section of docs/DESIGN.md", () => {
    // The compiler holds this list to the Effect union: a new effect must be added here, and so to the doc.
    const effects = {
      start: true,
      retarget: true,
      queue: true,
      adopted: true,
      collect: true,
      judge: true,
      land: true,
      "set-aside": true,
      drop: true,
      "stop-hold": true,
      hook: true,
      draw: true,
    } satisfies Record<Effect["type"], true>;
    const design = readFileSync(join(REPO_ROOT, "docs/DESIGN.md"), "utf8");
    const section = design.slice(design.indexOf("## The boundary machine"), design.indexOf("## The snapshot builder"));
    expect(section).toContain("stateDiagram-v2");
    for (const name of Object.keys(effects)) expect(section).toContain(`\`${name}\``);
  });
});
