// What skill routing and tool surfacing cost and save in dollars, priced as pruning is: the same learned
// profiles (behaviour, TTL, prices), the same token calibration on recorded usage, the same recorded misses
// and honoured cache shares (money.ts). Every arm is the session without the guard's edits; they differ only
// in the prefix routing decides (the skill catalog, the loaded skills' bodies, the tool schemas), carried
// as a lead on the system prompt that the recording did not hold. A change of the guard-on prefix (a set
// change) makes the next request write the whole prompt again. Pure: the replay gathers the requests.
import type { CacheProfile } from "../cache/cache-behaviour.ts";
import type { Piece } from "../replay/calibrate.ts";
import { type Honour, MoneySimulator, type RequestHead } from "../replay/money.ts";

/** The parts of one request's routed prefix, in tokens (Pi's own prompt is the recorded system piece). */
export interface PrefixParts {
  catalogAll: number;
  catalogOn: number;
  /** The loaded-skills section guard on. */
  bodies: number;
  toolsAll: number;
  toolsOn: number;
}

/** One request as the pruning replay's guard-off arm sees it, and routing's prefix for it. */
export interface RoutingRequest {
  head: RequestHead;
  /** The prompt without any context edit, its system piece first, and where it changed (PromptPieces). */
  off: readonly Piece[];
  offFrom?: number;
  /** The prompt as recorded, for a session recorded with the guard on (money.ts's `rec`). */
  rec?: readonly Piece[];
  recFrom?: number;
  outputChars: number;
  parts: PrefixParts;
  /** The guard-on prefix differs from the previous request's. */
  onChanged: boolean;
}

export interface RoutingAttribution {
  /** Guard-off and guard-on dollars of the whole session: the conversation and routing's prefix. */
  off: number;
  on: number;
  /** Saved by the catalog lines of skills not advertised. */
  skillsSaved: number;
  /** Saved by the tool schemas not shipped. */
  toolsSaved: number;
  /** Paid for the loaded skills' bodies. */
  bodiesPaid: number;
  /** Paid for the prompt rewritten after each set change. */
  rewritesPaid: number;
  /** off − on: positive when routing saves (before the classifier). */
  net: number;
}

interface ArmSpec {
  prefix: (p: PrefixParts) => number;
  /** Set changes rewrite the prompt in this arm. */
  changes: boolean;
}

/**
 * The attribution's arms, each without rewrites but the last: the catalog reduced, then the bodies added,
 * then the tools reduced, then the set changes as they happened. Their differences add up to net.
 */
const ARMS: readonly ArmSpec[] = [
  { prefix: (p) => p.catalogAll + p.toolsAll, changes: false },
  { prefix: (p) => p.catalogOn + p.toolsAll, changes: false },
  { prefix: (p) => p.catalogOn + p.bodies + p.toolsAll, changes: false },
  { prefix: (p) => p.catalogOn + p.bodies + p.toolsOn, changes: false },
  { prefix: (p) => p.catalogOn + p.bodies + p.toolsOn, changes: true },
];

interface Arm {
  spec: ArmSpec;
  simulator: MoneySimulator;
  version: number;
  lead?: number;
  key?: string;
}

/** Routing's arms, priced request by request through the money view's simulator. */
export class RoutingMoney {
  readonly #arms: Arm[];

  /**
   * `heads` and `profiles` as the pruning replay learned them from the same branch; `honour`: the shares
   * pruning's fit found (an arm with a lead cannot fit the recording itself).
   */
  constructor(
    heads: readonly RequestHead[],
    profiles: ReadonlyMap<string, CacheProfile>,
    honour?: ReadonlyMap<string, Honour | undefined>,
  ) {
    this.#arms = ARMS.map((spec) => ({ spec, simulator: new MoneySimulator(heads, profiles, honour), version: 0 }));
  }

  request(r: RoutingRequest): void {
    const [system, ...rest] = r.off;
    if (!system) return;
    for (const arm of this.#arms) {
      if (arm.spec.changes && r.onChanged) arm.version++;
      const lead = arm.spec.prefix(r.parts);
      const key = arm.version > 0 ? `${system.key}#${arm.version}` : system.key;
      const pieces = [{ ...system, key, lead }, ...rest];
      // A prefix of other tokens or another key: the prompt changed from its first piece.
      const from = lead !== arm.lead || key !== arm.key ? 0 : r.offFrom;
      arm.lead = lead;
      arm.key = key;
      arm.simulator.request({
        ...r.head,
        off: pieces,
        on: pieces,
        ...(from !== undefined ? { offFrom: from, onFrom: from } : {}),
        ...(r.rec ? { rec: r.rec, ...(r.recFrom !== undefined ? { recFrom: r.recFrom } : {}) } : {}),
        outputChars: r.outputChars,
      });
    }
  }

  /** Each arm's guard-off dollars, and the parts of routing's effect. */
  finish(): RoutingAttribution & { priced: boolean } {
    const money = this.#arms.map((a) => a.simulator.finish([], ""));
    const [n0, n1, n2, n3, on] = money.map((m) => m.off.dollars) as [number, number, number, number, number];
    return {
      off: n0,
      on,
      skillsSaved: n0 - n1,
      bodiesPaid: n2 - n1,
      toolsSaved: n2 - n3,
      rewritesPaid: on - n3,
      net: n0 - on,
      priced: money[0]?.priced ?? false,
    };
  }
}
