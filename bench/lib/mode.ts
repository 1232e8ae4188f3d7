// The two suites: --quick (smoke, < 1 min on 2 cores) and --full (the numbers in bench/RESULTS.md).
import type { PoolBackend } from "../../src/main/platform/pool.ts";
import type { OutputKind } from "./workloads.ts";

export interface BenchMode {
  name: "quick" | "full";
  reps: number;
  /** Session sizes (entries) for the hook benchmarks. */
  sessionSizes: number[];
  /**
   * New entries appended before each pass after the cold one. The first step (2: a question and an answer,
   * no tool calls) is the pass that sends what the cold pass edited; the later ones are the steady state.
   */
  steps: number[];
  /** New entries before the hang case's steady pass. */
  hangStep: number;
  outputs: Array<{ kind: OutputKind; bytes: number }>;
  backends: PoolBackend[];
  /** Loopback classifier latency per request, ms. */
  latencyMs: number;
  /** Pass deadline for the answering classifier: long enough that every request is answered. */
  timeoutMs: number;
  /** Pass deadline in the hang case. */
  hangTimeoutMs: number;
  hangSizes: number[];
  /** Reps for the hang and recall cases (each costs about a second). */
  slowReps: number;
  serializationSizes: number[];
  chunkOutputs: Array<{ kind: OutputKind; bytes: number }>;
  poolStartReps: number;
  recallTimeoutMs: number;
  recallBackends: PoolBackend[];
  /** Probe floor: repetitions and the idle window per sample. */
  floorReps: number;
  floorWindowMs: number;
  /** HTTP client benchmark: requests per client. */
  clientRequests: number;
}

const KB = 1024;
const MB = 1024 * 1024;

export const QUICK: BenchMode = {
  name: "quick",
  reps: 3,
  sessionSizes: [200, 2000],
  steps: [2, 20, 200],
  hangStep: 20,
  outputs: [
    { kind: "grep", bytes: 50 * KB },
    { kind: "grep", bytes: 5 * MB },
  ],
  backends: ["inline", "piscina", "tinypool"],
  latencyMs: 10,
  timeoutMs: 120_000,
  hangTimeoutMs: 1000,
  hangSizes: [2000],
  slowReps: 1,
  serializationSizes: [2000],
  chunkOutputs: [{ kind: "grep", bytes: 20 * MB }],
  poolStartReps: 2,
  recallTimeoutMs: 1000,
  recallBackends: ["inline", "piscina"],
  floorReps: 1,
  floorWindowMs: 250,
  clientRequests: 36,
};

export const FULL: BenchMode = {
  name: "full",
  reps: 7,
  sessionSizes: [200, 2000, 10000],
  steps: [2, 20, 200],
  hangStep: 20,
  outputs: [50 * KB, 500 * KB, 5 * MB, 20 * MB].flatMap((bytes) => [
    { kind: "grep" as const, bytes },
    { kind: "log" as const, bytes },
  ]),
  backends: ["inline", "piscina", "tinypool"],
  latencyMs: 100,
  timeoutMs: 600_000,
  hangTimeoutMs: 8000,
  hangSizes: [2000, 10000],
  slowReps: 5,
  serializationSizes: [2000, 10000],
  chunkOutputs: [
    { kind: "grep", bytes: 20 * MB },
    { kind: "log", bytes: 20 * MB },
  ],
  poolStartReps: 7,
  recallTimeoutMs: 1000,
  recallBackends: ["inline", "piscina", "tinypool"],
  floorReps: 5,
  floorWindowMs: 1000,
  clientRequests: 120,
};
