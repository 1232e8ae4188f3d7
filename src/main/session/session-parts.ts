// What a SessionGuard is made of (handed in by Pi's session start, or by a test) and the boundary shape
// its hooks read.
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import type { ClassifierLookup } from "../pass/classifier.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import type { TaskRunner } from "../platform/pool.ts";
import type { LoadedSettings } from "../platform/settings.ts";
import type { ThreadFetch } from "../platform/thread-fetch.ts";
import type { RoutingPi } from "../routing/session-routing.ts";

export type Found = Extract<ClassifierLookup, { ok: true }>;

/** A boundary as Pi hands it over (agent_before_settle, turn_end). */
export interface PiBoundary {
  entries: SessionBoundaryDraft[];
  context: { contextEntries: unknown[] };
}

export interface SessionGuardParts {
  settings: LoadedSettings;
  /** The pass worker pool (one thread: the worker keeps the session's copy). */
  passRunner: TaskRunner;
  recallRunner?: TaskRunner;
  /** Carries the classifier's HTTP requests on a thread of their own, off Pi's event loop. */
  http: Pick<ThreadFetch, "fetch" | "start" | "close">;
  pi: RoutingPi;
  /** The classify function for a classifier found in Pi's registry (default: Pi's client or the local scorer). */
  classify?: (ctx: ExtensionContext, found: Found, fetch: typeof globalThis.fetch) => ClassifyFn;
  clock?: () => number;
  /** Watches the process's exit signals; returns the removal. */
  watchExit?: (onExit: () => void) => () => void;
  /** Registers (true) or removes (false) the guard's turn_end handler (index.ts); none: the caller calls turnEnd. */
  turnEndHook?: (on: boolean) => void;
}
