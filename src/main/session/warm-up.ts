// The warm-up of one session: its snapshot built paced right after start (the footer needs it), and the
// session sent to the pass worker in paced slices once the first run starts, while the main model works.
// A pass waits for whatever of it is still running, so the two never interleave.
import type { PassPipeline } from "../pass/pass-pipeline.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { background } from "../platform/callbacks.ts";
import { nextTurn } from "../platform/pace.ts";
import { traceSwallowed } from "../platform/swallowed.ts";

export interface WarmUpDeps {
  pipeline: PassPipeline;
  /** Nothing more is done once the session is closed. */
  closed: () => boolean;
  enabled: () => boolean;
  /** Stops sending the session to the worker (shutdown). */
  signal: AbortSignal;
}

/** Pi's projection at the time it is read. */
type Projection = () => ProjectedLike[];

export class WarmUp {
  readonly #deps: WarmUpDeps;
  /** Background work that a pass must not interleave with. Never rejects. */
  #work: Promise<void> = Promise.resolve();
  /** Whether the pass worker has been sent the session (or a pass has run). */
  #workerWarm = false;
  /** Whether the snapshot has been built once (until then the footer shows no savings). */
  #snapshotBuilt = false;

  constructor(deps: WarmUpDeps) {
    this.#deps = deps;
  }

  get snapshotBuilt(): boolean {
    return this.#snapshotBuilt;
  }

  get workerWarm(): boolean {
    return this.#workerWarm;
  }

  /**
   * session_start: a resumed session can be large, so its snapshot is built paced right after start,
   * instead of in one block by the first redraw.
   */
  startSnapshot(projection: Projection, redraw: () => void): void {
    this.#work = background("snapshot-warm", () => this.#buildSnapshot(projection, redraw));
  }

  async #buildSnapshot(projection: Projection, redraw: () => void): Promise<void> {
    let built = false;
    try {
      await nextTurn();
      if (this.#deps.closed()) return;
      await this.#deps.pipeline.snapshots.entriesPaced(projection());
      built = true;
    } catch (error) {
      // The next redraw builds it.
      traceSwallowed("warm-up.snapshot", error);
    } finally {
      this.#snapshotBuilt = true;
    }
    if (built && !this.#deps.closed()) redraw();
  }

  /** agent_start: the worker is sent the session after the snapshot (if it has not been yet). */
  startWorker(projection: Projection): void {
    if (this.#workerWarm) return;
    this.#work = this.#work.then(() => background("worker-warm", () => this.warm(projection)));
  }

  /**
   * Sends the session to the pass worker in paced slices, instead of inside the first pass. Not at start:
   * a session that is only opened to be read never needs the worker's copy, and Pi is busy drawing it then.
   */
  async warm(projection: Projection): Promise<void> {
    if (this.#workerWarm || this.#deps.closed() || !this.#deps.enabled()) return;
    this.#workerWarm = true;
    try {
      await this.#deps.pipeline.warm(projection(), this.#deps.signal);
    } catch (error) {
      // Nothing to report: the first pass sends whatever did not arrive.
      traceSwallowed("warm-up.worker", error);
    }
  }

  /** A pass: waits for the warm-up; the pass itself sends the worker whatever it lacks from then on. */
  async beforePass(): Promise<void> {
    await this.#work;
    this.#workerWarm = true;
  }
}
