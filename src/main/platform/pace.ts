// Long main-thread loops are written as generators that yield at safe points, so the same code runs
// straight through (tests, small inputs) or paced: handing the event loop back whenever a slice of time
// is used up, which keeps Pi's UI responsive while a large session is walked.

/** Main-thread time a paced loop may hold the event loop before it yields, ms. */
const PACE_SLICE_MS = 2;

/** How many loop iterations a walker runs between two chances to yield. */
export const PACE_STRIDE = 256;

export type Steps<T> = Generator<void, T, void>;

/** Runs the steps to the end without yielding. */
export function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Resolves in the next event-loop turn (after pending I/O, such as Pi's UI input and rendering). */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs the steps, giving the event loop a turn first and then whenever `sliceMs` of work has passed since
 * the last one. The first turn keeps two paced walks in a row (or a walk after other synchronous work)
 * from adding up to one long block.
 */
export async function paced<T>(steps: Steps<T>, sliceMs = PACE_SLICE_MS): Promise<T> {
  await nextTurn();
  let since = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - since >= sliceMs) {
      await nextTurn();
      since = performance.now();
    }
  }
}
