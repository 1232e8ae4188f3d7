// The classifier client's own main-thread cost: pi-ai's System One client as the extension runs it (its
// HTTP on the thread of src/main/platform/thread-fetch.ts), the same client with its HTTP on the main thread, and a
// bare fetch and a bare node:http request with the same bodies, against the loopback server with no latency. Sequential requests give CPU per request; bursts of `concurrency` requests answered
// together give the stall when a wave of answers lands at once (the loopback answers every request of a
// wave after the same latency).
import { request } from "node:http";
import { planRunEnd } from "../../src/core/distill/plan.ts";
import type { ClassifierRequest } from "../../src/core/shared/types.ts";
import { SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { toProjection } from "../../test/kit/generate.ts";
import { benchConfig, loopbackClassify, startedThreadFetch } from "../../test/kit/hook.ts";
import type { LoopbackHost } from "../../test/kit/loopback-host.ts";
import { measureStall, ownStall, settle } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { baseSession } from "../lib/workloads.ts";

export type ClientName = "pi-ai classify, HTTP thread" | "pi-ai classify" | "fetch" | "node:http";

export interface ClientSample {
  client: ClientName;
  rep: number;
  requests: number;
  bodyChars: number;
  /** Sequential: main-thread CPU per request, and wall time per request. */
  cpuPerRequestMs: number;
  wallPerRequestMs: number;
  /** Bursts of `concurrency` requests: the longest stall (event-loop delay, no spin probe). */
  burst: number;
  /** Own stall (run-queue wait taken out) and wall-clock stall. */
  burstStallMs: number;
  burstWallMs: number;
}

function viaHttp(url: string, body: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          authorization: "Bearer k",
        },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => resolve(JSON.parse(Buffer.concat(parts).toString("utf8"))));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function viaFetch(url: string, body: string): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k" },
    body,
  });
  return res.json();
}

export async function runClient(
  mode: BenchMode,
  lb: LoopbackHost,
  log: (line: string) => void,
): Promise<ClientSample[]> {
  const samples: ClientSample[] = [];
  const plan = planRunEnd(new SnapshotBuilder().entries(toProjection(baseSession(2000))), benchConfig());
  if (plan.status !== "run") return samples;
  const reqs: ClassifierRequest[] = plan.requests.slice(0, mode.clientRequests);
  const bodyChars = Math.round(reqs.reduce((n, r) => n + JSON.stringify(r).length, 0) / reqs.length);
  const classify = loopbackClassify(lb.baseUrl);
  const http = await startedThreadFetch();
  const threaded = loopbackClassify(lb.baseUrl, http.fetch);
  const url = `${lb.baseUrl}/systemone`;
  const options = { signal: new AbortController().signal, timeoutMs: 60_000 };
  const clients: Array<[ClientName, (r: ClassifierRequest) => Promise<unknown>]> = [
    ["pi-ai classify, HTTP thread", (r) => threaded(r, options)],
    ["pi-ai classify", (r) => classify(r, options)],
    ["fetch", (r) => viaFetch(url, JSON.stringify({ model: "~typesafe/jev-latest", ...r }))],
    ["node:http", (r) => viaHttp(url, JSON.stringify({ model: "~typesafe/jev-latest", ...r }))],
  ];
  const burst = benchConfig().concurrency;
  await lb.set({ latencyMs: 0 });
  try {
    for (const [, fn] of clients) for (const r of reqs.slice(0, 12)) await fn(r);
    for (let rep = 0; rep < Math.min(mode.reps, 3); rep++) {
      for (const [client, fn] of clients) {
        const c0 = process.threadCpuUsage();
        const t0 = performance.now();
        for (const r of reqs) await fn(r);
        const wall = performance.now() - t0;
        const c1 = process.threadCpuUsage();
        await settle();
        const m = await measureStall(async () => {
          for (let i = 0; i + burst <= reqs.length; i += burst) await Promise.all(reqs.slice(i, i + burst).map(fn));
        }, "quiet");
        samples.push({
          client,
          rep,
          requests: reqs.length,
          bodyChars,
          cpuPerRequestMs: (c1.user - c0.user + c1.system - c0.system) / 1000 / reqs.length,
          wallPerRequestMs: wall / reqs.length,
          burst,
          burstStallMs: ownStall(m.stall),
          burstWallMs: m.stall.maxMs,
        });
        await settle();
      }
    }
  } finally {
    await lb.set({ latencyMs: mode.latencyMs });
    await http.close();
  }
  log("  classifier client: done");
  return samples;
}
