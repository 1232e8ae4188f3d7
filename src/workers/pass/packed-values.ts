// A list of values packed as one byte buffer (V8's structured-clone format, value by value, with end
// offsets), read back one value at a time.
//
// Why not return the objects from the pool task and let the pool clone them: objects a pool task returns
// reach the main thread through the pool's promise machinery, which keeps them reachable from a long-lived
// Map's old hash tables (see main/platform/in-flight.ts), so they outlive young-generation collections. In the
// profile of a 10,000-entry first pass (bench/profile.ts --classifier fake) nearly every byte of the
// request windows survived its first scavenge and was promoted: 4–7 ms pauses on Pi's thread. Bytes cross
// as one off-heap buffer whose small wrapper dies young, and each value becomes objects only when used.
// Same format as a structured clone, so the values come back exactly as a clone would give them, and
// reading one costs about a structured clone's deserialization (less than decoding and parsing JSON).
import { deserialize, serialize } from "node:v8";

export interface PackedValues {
  bytes: Uint8Array;
  /** Byte offset just past each value. */
  ends: number[];
}

/** Packs structured-cloneable values. */
export function packValues(values: readonly unknown[]): PackedValues {
  const parts = values.map((v) => serialize(v));
  // A buffer of its own: a pooled Buffer would carry its whole shared slab across the thread boundary.
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  const ends: number[] = [];
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
    ends.push(at);
  }
  return { bytes, ends };
}

/** Number of values in a pack. */
export function packedCount(pack: PackedValues): number {
  return pack.ends.length;
}

/** The value at `index`, as new objects. */
export function unpackValue<T>(pack: PackedValues, index: number): T {
  const end = pack.ends[index];
  if (end === undefined) throw new RangeError(`no value ${index} in a pack of ${pack.ends.length}`);
  const start = index === 0 ? 0 : (pack.ends[index - 1] as number);
  return deserialize(pack.bytes.subarray(start, end)) as T;
}
