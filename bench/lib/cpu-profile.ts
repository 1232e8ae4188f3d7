// A CPU profile of this (Pi's) thread, read against time windows: what the thread ran inside each hook's
// window, by the first project function on each sample's stack. For the census: a gap inside a hook is
// work the hook (or something the event loop ran meanwhile) did on Pi's thread, and the stack says which.
import { Session } from "node:inspector/promises";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Sample {
  /** performance.now() of the sample. */
  t: number;
  /** Duration it stands for (the next sample's delta, at most twice the interval), ms. */
  ms: number;
  /** Frames from the leaf up. */
  stack: string[];
  /** The innermost frame of the project's own code (`root`), or the leaf when none is. */
  own: string;
  /** Whether any frame on the stack is the project's own code. */
  ours: boolean;
}

const frameName = (n: ProfileNode, root: string) => {
  const url = n.callFrame.url.replace(/^file:\/\//, "");
  const file = url.startsWith(root) ? url.slice(root.length + 1) : (url.split("/node_modules/").pop() ?? url);
  return `${n.callFrame.functionName || "(anonymous)"} ${file}:${n.callFrame.lineNumber + 1}`;
};

/** Starts sampling this thread every `intervalUs`; `stop()` returns the samples with their stacks. */
export async function startCpuProfile(root: string, intervalUs = 250): Promise<{ stop(): Promise<Sample[]> }> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: intervalUs });
  await session.post("Profiler.start");
  return {
    async stop() {
      const { profile } = (await session.post("Profiler.stop")) as unknown as { profile: Profile };
      session.disconnect();
      // Profiler timestamps are the monotonic clock in µs, as is hrtime: this maps them to performance.now().
      const offsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
      const byId = new Map(profile.nodes.map((n) => [n.id, n]));
      const parent = new Map<number, number>();
      for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
      const stacks = new Map<number, { stack: string[]; own: string; ours: boolean }>();
      const stackOf = (id: number) => {
        let s = stacks.get(id);
        if (s) return s;
        const stack: string[] = [];
        let own: string | undefined;
        for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
          const n = byId.get(at) as ProfileNode;
          const name = frameName(n, root);
          stack.push(name);
          const url = n.callFrame.url.replace(/^file:\/\//, "");
          if (own === undefined && url.startsWith(`${root}/src/`)) own = name;
        }
        s = { stack, own: own ?? stack[0] ?? "?", ours: own !== undefined };
        stacks.set(id, s);
        return s;
      };
      const samples = profile.samples ?? [];
      const deltas = profile.timeDeltas ?? [];
      const out: Sample[] = [];
      let ts = profile.startTime;
      for (let i = 0; i < samples.length; i++) {
        ts += deltas[i] ?? 0;
        const next = deltas[i + 1] ?? 0;
        const { stack, own, ours } = stackOf(samples[i] as number);
        if (stack[0]?.startsWith("(idle)") || stack[0]?.startsWith("(program)")) continue;
        // A delta far over the interval is time the thread was off a core (a shared machine), not work.
        out.push({ t: ts / 1000 - offsetMs, ms: Math.min(next, 2 * intervalUs) / 1000, stack, own, ours });
      }
      return out;
    },
  };
}

/** The time per `own` frame of the samples inside the windows, largest first, with its costliest leaf. */
export function attribute(samples: readonly Sample[], windows: ReadonlyArray<{ start: number; end: number }>) {
  const sorted = [...windows].sort((a, b) => a.start - b.start);
  const sums = new Map<string, { ms: number; leaves: Map<string, number> }>();
  let w = 0;
  for (const s of samples) {
    while (w < sorted.length && (sorted[w] as { end: number }).end < s.t) w++;
    const win = sorted[w];
    if (!win || s.t < win.start) continue;
    const sum = sums.get(s.own) ?? { ms: 0, leaves: new Map<string, number>() };
    sum.ms += s.ms;
    const leaf = s.stack[0] ?? "?";
    sum.leaves.set(leaf, (sum.leaves.get(leaf) ?? 0) + s.ms);
    sums.set(s.own, sum);
  }
  return [...sums]
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([own, { ms, leaves }]) => {
      const [leaf, leafMs] = [...leaves].sort((a, b) => b[1] - a[1])[0] ?? ["?", 0];
      return { own, ms, leaf: `${leaf} (${leafMs.toFixed(1)} ms)` };
    });
}

/** The project frames (deduplicated, leaf first) of the samples in one window. */
export function stacksIn(samples: readonly Sample[], start: number, end: number): string[] {
  const inside = samples.filter((s) => s.t >= start && s.t <= end);
  const counts = new Map<string, number>();
  for (const s of inside) {
    const ours = s.stack.filter((f) => f.includes(" src/")).slice(0, 4);
    const key = `${s.stack[0]} <- ${ours.join(" <- ") || "(not ours)"}`;
    counts.set(key, (counts.get(key) ?? 0) + s.ms);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, ms]) => `${ms.toFixed(1)} ms ${k}`);
}
