// What a session shows of itself: the footer's state and text, the dollars saved so far (priced on the pass
// pool's thread while the agent waits), and `/guard`'s report. It reads the session's parts; it decides
// nothing for them.
import type { ExtensionContext, SessionEntry } from "@earendil-works/pi-coding-agent";
import { pinCounts, readPins } from "../../core/records/pins.ts";
import { currentSavings } from "../../core/records/stats.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { SnapEntry } from "../../core/shared/types.ts";
import type { ClassifierLookup } from "../pass/classifier.ts";
import type { PassPipeline } from "../pass/pass-pipeline.ts";
import type { Judged } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { callback } from "../platform/callbacks.ts";
import { type PriceBook, priceBookOf } from "../replay/prices.ts";
import type { SessionRouting } from "../routing/session-routing.ts";
import type { Boundary } from "./boundary.ts";
import { BranchIndex } from "./branch-index.ts";
import { Footer } from "./footer.ts";
import { FooterFacts } from "./footer-facts.ts";
import { LiveSavings } from "./live-savings.ts";
import { statusReport } from "./report.ts";
import type { PendingRestores } from "./restore.ts";
import type { GuardState } from "./status.ts";

const NO_SAVINGS = { chars: 0, items: 0 };

/** The TUI's width, which `/guard` fits its lines to; none in print, JSON and RPC modes. */
export function terminalWidth(ctx: Pick<ExtensionContext, "hasUI" | "mode">): number | undefined {
  return ctx.hasUI && ctx.mode === "tui" ? process.stdout.columns : undefined;
}

export function projectedEntries(ctx: ExtensionContext): ProjectedLike[] {
  return ctx.sessionManager.buildSessionProjection().entries as unknown as ProjectedLike[];
}

/**
 * A price book that asks Pi's registry once per model for the refresh it serves: a refresh reads every
 * request of the branch, and each lookup copies the provider's models.
 */
function memoBook(book: PriceBook): PriceBook {
  const found = new Map<string, ReturnType<PriceBook["model"]>>();
  return {
    ...book,
    model(provider, id) {
      const key = `${provider}\u0000${id}`;
      if (!found.has(key)) found.set(key, book.model(provider, id));
      return found.get(key);
    },
  };
}

/** The session's parts the view reads (SessionGuard). */
export interface ViewHost {
  config(): GuardConfig;
  closed(): boolean;
  readonly pipeline: PassPipeline;
  readonly boundary: Boundary;
  readonly routing: SessionRouting;
  readonly restores: PendingRestores;
  lookup(ctx: ExtensionContext): ClassifierLookup;
  /** Pi's projection of the branch now, kept entry by entry (read it at once: it changes). */
  projected(ctx: ExtensionContext): readonly ProjectedLike[];
  /** The warm-up has built the snapshot (paced): before that, reading it would build it in one block. */
  snapshotBuilt(): boolean;
  /** A pass's drafts that wait to land on this branch. */
  readyHere(sm: ExtensionContext["sessionManager"]): Judged | undefined;
}

export class SessionView {
  readonly #host: ViewHost;
  readonly #footer = new Footer();
  /** Dollars saved so far on the branch, and the branch they follow. */
  readonly #dollars = new LiveSavings();
  readonly #dollarsBranch = new BranchIndex();
  readonly #facts = new FooterFacts();

  constructor(host: ViewHost) {
    this.#host = host;
  }

  /** The footer's state. */
  status(ctx: ExtensionContext): GuardState {
    const host = this.#host;
    if (!host.config().enabled) return { kind: "off" };
    if (host.pipeline.runner.failure) return { kind: "no-workers", error: host.pipeline.runner.failure.message };
    const found = host.lookup(ctx);
    if (!found.ok) return { kind: "unavailable", lookup: found };
    const view = host.boundary.view;
    if (view === "handing-over") return { kind: "handing-over" };
    if (view === "asking") return { kind: "busy" };
    if (view === "background-asking") return { kind: "checkpoint" };
    const breaker = host.pipeline.breakerState();
    if (breaker.kind === "open") return { kind: "paused", until: breaker.until, error: breaker.error };
    const shown = host.snapshotBuilt() ? this.#facts.shown(this.snapshot(ctx), host.pipeline.snapshots) : undefined;
    return {
      kind: "ready",
      ...(this.#dollars.latest ? { dollars: this.#dollars.latest } : {}),
      savings: shown?.savings ?? NO_SAVINGS,
      lifetime: this.#facts.lifetime(ctx.sessionManager),
      pins: pinCounts(shown?.pins ?? readPins([])),
      pending: host.readyHere(ctx.sessionManager) !== undefined,
    };
  }

  /** What the model sees now, as snapshot entries (built incrementally). */
  snapshot(ctx: ExtensionContext): SnapEntry[] {
    return this.#host.pipeline.snapshots.entries(this.#host.projected(ctx));
  }

  /** Redraws the footer (only a changed text reaches the UI). */
  readonly draw = callback("status-redraw", (ctx: ExtensionContext) => {
    const host = this.#host;
    if (!ctx.hasUI || host.closed()) return;
    this.#footer.show(ctx, this.status(ctx));
    host.routing.redraw(ctx);
    // Priced while the agent waits for the user (after a run settles), in slices that yield the pass
    // thread to any pass (live-savings.ts).
    if (host.config().enabled && ctx.isIdle?.() !== false) this.#refreshDollars(ctx);
  });

  #refreshDollars(ctx: ExtensionContext): void {
    this.#dollars.refresh({
      // Walked back from the leaf only to the first entry already known.
      branch: () => this.#dollarsBranch.sync(ctx.sessionManager).entries as unknown as SessionEntry[],
      lookup: (id) => ctx.sessionManager.getEntry(id),
      book: () => memoBook(priceBookOf(ctx.modelRegistry)),
      runner: () => (this.#host.closed() ? undefined : this.#host.pipeline.runner),
      changed: () => {
        // The next boundary's gates do not act on a cache model the bill contradicts (cache-doubt.ts).
        this.#host.pipeline.cacheDoubts = this.#dollars.latest?.misses ?? [];
        this.draw(ctx);
      },
    });
  }

  /** The footer's dollars saved on this branch, once priced (`/guard stats`). */
  get savedSoFar(): LiveSavings["latest"] {
    return this.#dollars.latest;
  }

  /** What `/guard` (status) reports. */
  report(ctx: ExtensionContext): string {
    const host = this.#host;
    const snap = this.snapshot(ctx);
    return statusReport({
      config: host.config(),
      found: host.lookup(ctx),
      ...(host.pipeline.runner.failure ? { workers: host.pipeline.runner.failure.message } : {}),
      savings: currentSavings(snap),
      pins: pinCounts(readPins(snap)),
      branch: ctx.sessionManager.getBranch(),
      paused: host.pipeline.breakerState(),
      boundary: host.boundary.state,
      routing: host.routing.reportLine(),
      ...(this.#dollars.latest ? { dollars: this.#dollars.latest } : {}),
      ...(host.pipeline.lastGate ? { gate: host.pipeline.lastGate } : {}),
      pendingRestores: host.restores.pending(ctx.sessionManager).length,
      ...(terminalWidth(ctx) ? { width: terminalWidth(ctx) } : {}),
    });
  }
}
