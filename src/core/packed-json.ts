// A list of JSON values packed as UTF-8 bytes with end offsets, read back one value at a time.
//
// Why not hand the objects to the pool and let it clone them: objects a pool task returns reach the main
// thread through the pool's promise machinery, and there they outlive young-generation collections
// (bench/profile.ts --classifier fake shows it: nearly every byte of the requests a 10,000-entry pass
// fetched survived its first scavenge and was promoted, 4–7 ms pauses on Pi's thread). Bytes cross as one
// off-heap buffer whose small wrapper dies young, and each value becomes objects only when it is used.

export interface PackedJson {
  bytes: Uint8Array;
  /** Byte offset just past each value. */
  ends: number[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Packs JSON-safe values (what JSON.stringify keeps is what comes back). */
export function packJson(values: readonly unknown[]): PackedJson {
  const parts = values.map((v) => encoder.encode(JSON.stringify(v)));
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
export function packedCount(pack: PackedJson): number {
  return pack.ends.length;
}

/** The value at `index`, as new objects. */
export function unpackJson<T>(pack: PackedJson, index: number): T {
  const end = pack.ends[index];
  if (end === undefined) throw new RangeError(`no value ${index} in a pack of ${pack.ends.length}`);
  const start = index === 0 ? 0 : (pack.ends[index - 1] as number);
  return JSON.parse(decoder.decode(pack.bytes.subarray(start, end))) as T;
}
