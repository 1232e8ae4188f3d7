// The answer cache for hosted classifiers: a replay that is run again asks nothing it asked before.
// One msgpackr file per answer, named by the SHA-256 of the model and the request, under
// `<agentDir>/context-guard-cache/` (or --cache). Only answered requests are stored; errors and
// timeouts are asked again. The embedded local model is never cached: it answers at once.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pack, unpack } from "msgpackr";
import type { ClassifierOutcome, ClassifierRequest } from "../../core/shared/types.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { traceSwallowed } from "../platform/swallowed.ts";

/** Bump when the stored shape changes: older files are then ignored. */
const CACHE_FORMAT = 1;

export interface CacheStats {
  hits: number;
  misses: number;
  writes: number;
}

export interface AnswerCache {
  classify: ClassifyFn;
  stats: CacheStats;
}

interface Stored {
  v: number;
  model: string;
  outcome: ClassifierOutcome;
}

/** The cache key: SHA-256 over the model and the request's JSON. */
export function requestKey(model: string, request: ClassifierRequest): string {
  return createHash("sha256")
    .update(model)
    .update("\n")
    .update(JSON.stringify({ state: request.state, questions: request.questions }))
    .digest("hex");
}

export function cachePath(dir: string, key: string): string {
  return join(dir, key.slice(0, 2), `${key}.msgpack`);
}

async function load(path: string, model: string): Promise<ClassifierOutcome | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch {
    // swallow-ok: No cache file (or an unreadable one): the classifier is asked.
    return undefined;
  }
  try {
    const stored = unpack(bytes) as Stored;
    if (stored?.v !== CACHE_FORMAT || stored.model !== model || stored.outcome?.status !== "stop") return undefined;
    return stored.outcome;
  } catch (error) {
    // A cache file from another format or a torn write: the classifier is asked again.
    traceSwallowed("replay-cache.read", error);
    return undefined;
  }
}

async function save(path: string, stored: Stored): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  // pack() returns a view into msgpackr's shared buffer: copy it before the next pack reuses it.
  await writeFile(tmp, Buffer.from(pack(stored)));
  await rename(tmp, path);
}

/** Wraps a classifier so answers are read from and written to `dir`. */
export function cachedClassifier(inner: ClassifyFn, dir: string, model: string): AnswerCache {
  const stats: CacheStats = { hits: 0, misses: 0, writes: 0 };
  const classify: ClassifyFn = async (request, options) => {
    const path = cachePath(dir, requestKey(model, request));
    const hit = await load(path, model);
    if (hit) {
      stats.hits++;
      // A cached answer costs nothing this time and arrives at once.
      return { ...hit, costUsd: 0, ms: 0 };
    }
    stats.misses++;
    const outcome = await inner(request, options);
    if (outcome.status === "stop") {
      try {
        await save(path, { v: CACHE_FORMAT, model, outcome });
        stats.writes++;
      } catch (error) {
        // A cache that cannot be written only costs the next run a request.
        traceSwallowed("replay-cache.write", error);
      }
    }
    return outcome;
  };
  return { classify, stats };
}
