export interface PassMoney {
  pass: number;
  afterRequest: number;
  /** On − off dollars of the request after the pass: the cache rewrite it caused, less what it saved at once. */
  rewrite: number;
  classifier: number;
  /** Request at which the savings since the pass covered its cost; undefined: never (before the next edit). */
  paidBackAt?: number;
}

export interface PassCost {
  pass: number;
  afterRequest: number;
  /** The pass edited the context. */
  edited: boolean;
  classifier: number;
}
// When each editing pass of a replayed session paid for itself (money.ts gathers the costs per request).

/** Each editing pass: the first request's extra cost and the request at which the savings since covered it. */
export function passPayback(
  passes: readonly PassCost[],
  perRequest: ReadonlyMap<number, { off: number; on: number }>,
  lastRequest: number,
): PassMoney[] {
  const edits = passes.filter((p) => p.edited);
  return edits.map((p, i) => {
    const until = edits[i + 1]?.afterRequest ?? lastRequest;
    const first = perRequest.get(p.afterRequest + 1);
    const out: PassMoney = {
      pass: p.pass,
      afterRequest: p.afterRequest,
      rewrite: first ? first.on - first.off : 0,
      classifier: p.classifier,
    };
    let saved = -p.classifier;
    for (let n = p.afterRequest + 1; n <= until; n++) {
      const c = perRequest.get(n);
      if (!c) continue;
      saved += c.off - c.on;
      if (saved >= 0) {
        out.paidBackAt = n;
        break;
      }
    }
    return out;
  });
}
