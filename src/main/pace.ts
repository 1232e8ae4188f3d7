// Long main-thread loops are written as generators that yield at safe points, so the same code runs
// straight through (tests, small inputs) or paced: handing the event loop back whenever a slice of time
// is used up, which keeps Pi's UI responsive while a large session is walked.

/** Main-thread time a paced loop may hold the event loop before it yields, ms. */
export const PACE_SLICE_MS = 2;

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

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs the steps, giving the event loop a turn whenever `sliceMs` of work has passed since the last one. */
export async function paced<T>(steps: Steps<T>, sliceMs = PACE_SLICE_MS): Promise<T> {
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
