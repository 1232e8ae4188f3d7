// What the footer shows of the branch (savings now, lifetime totals, pins), kept as the branch grows so a
// redraw at every turn costs what is new. Totals fold each new branch entry in; savings and pins are read
// again only when the snapshot changed otherwise than by plain messages appended at its end (an edit, a
// record, a pin, a compaction, another branch), which is when they can change.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type Pins, readPins } from "../../core/records/pins.ts";
import {
  type BranchEntryLike,
  currentSavings,
  type Lifetime,
  LifetimeTally,
  type Savings,
} from "../../core/records/stats.ts";
import type { SnapEntry } from "../../core/shared/types.ts";
import type { SnapshotBuilder } from "../pass/snapshot.ts";
import { BranchIndex } from "./branch-index.ts";

type SessionView = Pick<ExtensionContext["sessionManager"], "getLeafEntry" | "getEntry">;

/** A message appended as it is: it neither saves, nor records, nor pins anything. */
const plain = (e: SnapEntry) => e.type === "message" && e.edited !== true;

export class FooterFacts {
  readonly #branch = new BranchIndex();
  #tally = new LifetimeTally();
  #read = 0;
  #resets = -1;
  #snap: readonly SnapEntry[] | undefined;
  #savings: Savings = { chars: 0, items: 0 };
  #pins: Pins = readPins([]);

  /** Totals of the guard's records on the branch. */
  lifetime(sm: SessionView): Lifetime {
    const index = this.#branch.sync(sm);
    if (index.resets !== this.#resets) {
      this.#resets = index.resets;
      this.#tally = new LifetimeTally();
      this.#read = 0;
    }
    for (; this.#read < index.entries.length; this.#read++)
      this.#tally.add(index.entries[this.#read] as unknown as BranchEntryLike);
    return { ...this.#tally.value };
  }

  /** Savings and pins of this snapshot (built by `builder`, like the last one asked about). */
  shown(
    snap: readonly SnapEntry[],
    builder: Pick<SnapshotBuilder, "changesBetween">,
  ): { savings: Savings; pins: Pins } {
    if (snap !== this.#snap) {
      const last = this.#snap;
      const changes = last ? builder.changesBetween(last, snap) : undefined;
      const appended =
        last !== undefined &&
        changes !== undefined &&
        changes.changed.length === 0 &&
        changes.from >= last.length &&
        snap.slice(last.length).every(plain);
      if (!appended) {
        this.#savings = currentSavings(snap);
        this.#pins = readPins(snap);
      }
      this.#snap = snap;
    }
    return { savings: this.#savings, pins: this.#pins };
  }
}
