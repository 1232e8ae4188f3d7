// Bookkeeping for work in flight (HTTP requests, request windows), keyed by integer id.
//
// Why not a Map: on Node 22 (V8 12), a long-lived Map that keeps taking and dropping entries leaves what
// it dropped reachable for young-generation collections until the next full one (through its replaced
// hash tables, as far as we can tell; overwriting a value before deleting it does not help), so everything
// those values point to (a request body, the awaiting client's state) is copied and promoted on Pi's
// thread. The measurement is in docs/performance.md ("Garbage that outlived its collections").
export class InFlight<T> {
  #items: Record<number, T> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(id: number): T | undefined {
    return this.#items[id];
  }

  set(id: number, item: T): void {
    if (!(id in this.#items)) this.#size++;
    this.#items[id] = item;
  }

  /** Removes and returns the item, if it was there. */
  take(id: number): T | undefined {
    if (!(id in this.#items)) return undefined;
    const item = this.#items[id];
    delete this.#items[id];
    this.#size--;
    return item;
  }

  /** Removes the item under `id` only if it is still `item` (a newer one under the same id stays). */
  release(id: number, item: T): void {
    if (id in this.#items && this.#items[id] === item) this.take(id);
  }

  /** Removes and returns every item. */
  drain(): Array<[number, T]> {
    const all = Object.entries(this.#items).map(([id, item]) => [Number(id), item] as [number, T]);
    this.#items = Object.create(null);
    this.#size = 0;
    return all;
  }
}
