// How much room a model-visible message takes: its text plus its images, each estimated from the
// pixel size read out of the image header. Only the bytes a header parser asks for are decoded from
// base64, so a JPEG whose frame header sits behind a large EXIF block costs a few dozen lookups.

import type { ImageHead, SnapEntry } from "./types.ts";

export interface ImageSize {
  width: number;
  height: number;
}

/** Pixels per token in the estimate. */
const PIXELS_PER_TOKEN = 750;
/** Tokens assumed for an image whose header cannot be read. */
export const IMAGE_FALLBACK_TOKENS = 1600;
/** No image is estimated above this many tokens. */
export const IMAGE_MAX_TOKENS = 6700;
/** Characters per token, as everywhere else in the guard. */
export const CHARS_PER_TOKEN = 4;

// --- base64, decoded on demand ---

const SEXTETS: Int8Array = (() => {
  const table = new Int8Array(128).fill(-1);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  // The URL-safe alphabet too; nothing else uses these characters.
  table["-".charCodeAt(0)] = 62;
  table["_".charCodeAt(0)] = 63;
  return table;
})();

/** Byte `i` of the data, or -1 when the data ends there or is not valid base64 at that spot. */
type ByteAt = (i: number) => number;

function sextet(data: string, index: number): number {
  if (index >= data.length) return -1;
  const code = data.charCodeAt(index);
  return code < 128 ? (SEXTETS[code] ?? -1) : -1;
}

function base64Reader(raw: string): ByteAt {
  // Data URLs and line-wrapped base64 are tolerated; the usual case needs neither fix.
  let data = raw;
  if (data.startsWith("data:")) {
    const comma = data.indexOf(",");
    data = comma === -1 ? "" : data.slice(comma + 1);
  }
  // Whitespace is looked for only as far as the header is read (a PNG's size is in its first 32
  // characters, of up to 90,000): up to the first one, the data reads the same with or without it.
  let clean = 0;
  const cleanUpTo = (end: number) => {
    for (; clean < end && clean < data.length; clean++) {
      const code = data.charCodeAt(clean);
      if (code === 32 || (code >= 9 && code <= 13) || code >= 128) {
        data = data.replace(/\s+/g, "");
        clean = Number.POSITIVE_INFINITY;
      }
    }
  };
  return (i: number): number => {
    if (!Number.isInteger(i) || i < 0) return -1;
    const group = Math.floor(i / 3) * 4;
    cleanUpTo(group + 4);
    const a = sextet(data, group);
    const b = sextet(data, group + 1);
    if (a < 0 || b < 0) return -1;
    const offset = i % 3;
    if (offset === 0) return (a << 2) | (b >> 4);
    const c = sextet(data, group + 2);
    if (c < 0) return -1;
    if (offset === 1) return ((b & 0x0f) << 4) | (c >> 2);
    const d = sextet(data, group + 3);
    if (d < 0) return -1;
    return ((c & 0x03) << 6) | d;
  };
}

function u16be(at: ByteAt, i: number): number {
  const a = at(i);
  const b = at(i + 1);
  return a < 0 || b < 0 ? -1 : (a << 8) | b;
}

function u16le(at: ByteAt, i: number): number {
  const a = at(i);
  const b = at(i + 1);
  return a < 0 || b < 0 ? -1 : a | (b << 8);
}

function u24le(at: ByteAt, i: number): number {
  const lo = u16le(at, i);
  const hi = at(i + 2);
  return lo < 0 || hi < 0 ? -1 : lo + hi * 0x10000;
}

function u32be(at: ByteAt, i: number): number {
  const hi = u16be(at, i);
  const lo = u16be(at, i + 2);
  return hi < 0 || lo < 0 ? -1 : hi * 0x10000 + lo;
}

function ascii(at: ByteAt, i: number, text: string): boolean {
  for (let k = 0; k < text.length; k++) if (at(i + k) !== text.charCodeAt(k)) return false;
  return true;
}

function sized(width: number, height: number): ImageSize | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

// --- formats ---

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Chunks looked at before giving up on finding IHDR (Apple's CgBI variant puts one chunk first). */
const PNG_MAX_CHUNKS = 4;

function pngSize(at: ByteAt): ImageSize | undefined {
  let pos = PNG_SIGNATURE.length;
  for (let n = 0; n < PNG_MAX_CHUNKS; n++) {
    const length = u32be(at, pos);
    if (length < 0) return undefined;
    if (ascii(at, pos + 4, "IHDR")) {
      if (length < 8) return undefined;
      const width = u32be(at, pos + 8);
      const height = u32be(at, pos + 12);
      return width < 0 || height < 0 ? undefined : sized(width, height);
    }
    pos += 12 + length; // length, type, data, CRC
  }
  return undefined;
}

function gifSize(at: ByteAt): ImageSize | undefined {
  const width = u16le(at, 6);
  const height = u16le(at, 8);
  return width < 0 || height < 0 ? undefined : sized(width, height);
}

function webpSize(at: ByteAt): ImageSize | undefined {
  const data = 20; // RIFF header (12) + chunk type (4) + chunk length (4)
  if (ascii(at, 12, "VP8 ")) {
    // Lossy: 3-byte frame tag, start code, then 14-bit width and height.
    if (at(data + 3) !== 0x9d || at(data + 4) !== 0x01 || at(data + 5) !== 0x2a) return undefined;
    const w = u16le(at, data + 6);
    const h = u16le(at, data + 8);
    return w < 0 || h < 0 ? undefined : sized(w & 0x3fff, h & 0x3fff);
  }
  if (ascii(at, 12, "VP8L")) {
    // Lossless: signature byte, then width−1 and height−1 as 14-bit fields, least significant bit first.
    if (at(data) !== 0x2f) return undefined;
    const b = [at(data + 1), at(data + 2), at(data + 3), at(data + 4)];
    if (b.some((x) => x < 0)) return undefined;
    const [b0, b1, b2, b3] = b as [number, number, number, number];
    const width = 1 + (((b1 & 0x3f) << 8) | b0);
    const height = 1 + (((b3 & 0x0f) << 10) | (b2 << 2) | ((b1 & 0xc0) >> 6));
    return sized(width, height);
  }
  if (ascii(at, 12, "VP8X")) {
    // Extended: flags and reserved bytes, then canvas width−1 and height−1 as 24-bit fields.
    const w = u24le(at, data + 4);
    const h = u24le(at, data + 7);
    return w < 0 || h < 0 ? undefined : sized(w + 1, h + 1);
  }
  return undefined;
}

/** SOF markers carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function jpegSize(at: ByteAt): ImageSize | undefined {
  let pos = 2; // after SOI
  for (;;) {
    if (at(pos) !== 0xff) return undefined;
    // Any number of 0xFF fill bytes may come before a marker.
    while (at(pos) === 0xff) pos++;
    const marker = at(pos);
    if (marker < 0) return undefined;
    pos++;
    // Markers without a payload.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;
    // End of image or start of scan before any frame header: nothing to read.
    if (marker === 0xd9 || marker === 0xda || marker === 0xd8 || marker === 0x00) return undefined;
    const length = u16be(at, pos);
    if (length < 2) return undefined;
    if (isStartOfFrame(marker)) {
      // length (2), precision (1), height (2), width (2)
      const height = u16be(at, pos + 3);
      const width = u16be(at, pos + 5);
      return width < 0 || height < 0 ? undefined : sized(width, height);
    }
    pos += length;
  }
}

/**
 * Pixel size from the start of the image's base64 data, or undefined when the header is missing,
 * cut off or not one of PNG, GIF, WebP and JPEG. The format is taken from the bytes, not the MIME type.
 */
export function imageSize(head: ImageHead | undefined): ImageSize | undefined {
  if (!head || typeof head.head !== "string") return undefined;
  try {
    const at = base64Reader(head.head);
    if (PNG_SIGNATURE.every((b, i) => at(i) === b)) return pngSize(at);
    if (ascii(at, 0, "GIF87a") || ascii(at, 0, "GIF89a")) return gifSize(at);
    if (ascii(at, 0, "RIFF") && ascii(at, 8, "WEBP")) return webpSize(at);
    if (at(0) === 0xff && at(1) === 0xd8) return jpegSize(at);
    return undefined;
  } catch {
    // swallow-ok: A truncated or malformed header reads past its end: its size is unknown.
    return undefined;
  }
}

/** Estimated tokens of an image of this size (the fallback when the size is unknown). */
export function imageTokens(size: ImageSize | undefined): number {
  if (!size || !(size.width > 0) || !(size.height > 0)) return IMAGE_FALLBACK_TOKENS;
  return Math.min(IMAGE_MAX_TOKENS, Math.ceil((size.width * size.height) / PIXELS_PER_TOKEN));
}

/** Estimated characters an image stands for. */
export function imageChars(head: ImageHead | undefined): number {
  return imageTokens(imageSize(head)) * CHARS_PER_TOKEN;
}

/** Model-visible size of an entry: its text plus each of its images by the size model. */
export function visibleChars(entry: SnapEntry): number {
  let total = entry.text.length;
  const heads = entry.imageHeads;
  for (let i = 0; i < entry.images; i++) total += imageChars(heads?.[i]);
  return total;
}
