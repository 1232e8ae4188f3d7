import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  IMAGE_FALLBACK_TOKENS,
  IMAGE_MAX_TOKENS,
  imageChars,
  imageSize,
  imageTokens,
  visibleChars,
} from "../../../../src/core/shared/size.ts";
import { IMAGE_HEAD_CHARS, type ImageHead, type SnapEntry } from "../../../../src/core/shared/types.ts";

// --- byte builders for real image headers ---

const bytes = (...parts: Array<number[] | Uint8Array | string>): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));
const u16be = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u16le = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const u32be = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const u32le = (n: number) => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];

function pngChunk(type: string, data: Buffer): Buffer {
  const typed = bytes(type, data);
  return bytes(u32be(data.length), typed, u32be(crc32(typed)));
}

function png(width: number, height: number, before: Buffer[] = []): Buffer {
  const ihdr = bytes(u32be(width), u32be(height), [8, 2, 0, 0, 0]);
  return bytes(
    [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
    ...before,
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", Buffer.alloc(40, 7)),
    pngChunk("IEND", Buffer.alloc(0)),
  );
}

function gif(width: number, height: number, version = "GIF89a"): Buffer {
  // Header, logical screen descriptor (no global colour table), trailer.
  return bytes(version, u16le(width), u16le(height), [0x00, 0x00, 0x00], [0x3b]);
}

function riff(chunkType: string, payload: Buffer): Buffer {
  const chunk = bytes(chunkType, u32le(payload.length), payload, payload.length % 2 ? [0] : []);
  return bytes("RIFF", u32le(4 + chunk.length), "WEBP", chunk);
}

function webpLossy(width: number, height: number, scale = 0): Buffer {
  // Key frame tag (3 bytes), start code, 14-bit sizes with 2 scale bits on top.
  const frameTag = [0x50, 0x02, 0x00];
  const payload = bytes(
    frameTag,
    [0x9d, 0x01, 0x2a],
    u16le(width | (scale << 14)),
    u16le(height | (scale << 14)),
    Buffer.alloc(20),
  );
  return riff("VP8 ", payload);
}

function webpLossless(width: number, height: number): Buffer {
  // 14 bits width−1, 14 bits height−1, 1 bit alpha, 3 bits version, packed little-endian.
  const bits = (width - 1) | ((height - 1) << 14) | (1 << 28);
  return riff("VP8L", bytes([0x2f], u32le(bits), Buffer.alloc(16)));
}

function webpExtended(width: number, height: number): Buffer {
  const payload = bytes([0x10, 0, 0, 0], u24le(width - 1), u24le(height - 1));
  return riff("VP8X", bytes(payload, bytes("ALPH", u32le(4), [0, 0, 0, 0])));
}

function jpegSegment(marker: number, payload: Buffer): Buffer {
  return bytes([0xff, marker], u16be(payload.length + 2), payload);
}

interface JpegOptions {
  exifBytes?: number;
  sof?: number;
  /** Extra 0xFF fill bytes before the SOF marker. */
  fill?: number;
}

function jpeg(width: number, height: number, options: JpegOptions = {}): Buffer {
  const { exifBytes = 0, sof = 0xc0, fill = 0 } = options;
  const app0 = jpegSegment(0xe0, bytes("JFIF\0", [1, 1, 0], u16be(72), u16be(72), [0, 0]));
  const app1 =
    exifBytes > 0 ? jpegSegment(0xe1, bytes("Exif\0\0", "MM\0*", Buffer.alloc(exifBytes - 10, 0xab))) : bytes();
  const dqt = jpegSegment(0xdb, bytes([0], Buffer.alloc(64, 1)));
  // A DHT segment (0xC4) sits in the SOF range but holds tables: a parser must skip it.
  const dht = jpegSegment(0xc4, bytes([0], Buffer.alloc(16, 0), [0xc4, 0xc0]));
  const frame = bytes(
    Buffer.alloc(fill, 0xff),
    jpegSegment(sof, bytes([8], u16be(height), u16be(width), [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])),
  );
  const sos = jpegSegment(0xda, bytes([3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3f, 0]));
  return bytes([0xff, 0xd8], app0, app1, dqt, dht, frame, sos, Buffer.alloc(32, 0x55), [0xff, 0xd9]);
}

const head = (data: Buffer, mimeType = "image/png"): ImageHead => ({
  mimeType,
  head: data.toString("base64").slice(0, IMAGE_HEAD_CHARS),
});

describe("imageSize", () => {
  it("reads PNG from IHDR", () => {
    expect(imageSize(head(png(1280, 960)))).toEqual({ width: 1280, height: 960 });
    expect(imageSize(head(png(1, 70_000)))).toEqual({ width: 1, height: 70_000 });
  });

  it("finds IHDR after Apple's CgBI chunk", () => {
    const cgbi = pngChunk("CgBI", Buffer.from([0x50, 0x00, 0x20, 0x06]));
    expect(imageSize(head(png(640, 1136, [cgbi])))).toEqual({ width: 640, height: 1136 });
  });

  it("reads GIF87a and GIF89a", () => {
    expect(imageSize(head(gif(320, 200), "image/gif"))).toEqual({ width: 320, height: 200 });
    expect(imageSize(head(gif(65_535, 2, "GIF87a"), "image/gif"))).toEqual({ width: 65_535, height: 2 });
  });

  it("reads WebP VP8, VP8L and VP8X", () => {
    expect(imageSize(head(webpLossy(1024, 768), "image/webp"))).toEqual({ width: 1024, height: 768 });
    // Scale bits above the 14-bit size are not part of it.
    expect(imageSize(head(webpLossy(16_383, 5, 3), "image/webp"))).toEqual({ width: 16_383, height: 5 });
    expect(imageSize(head(webpLossless(800, 600), "image/webp"))).toEqual({ width: 800, height: 600 });
    expect(imageSize(head(webpLossless(16_384, 1), "image/webp"))).toEqual({ width: 16_384, height: 1 });
    expect(imageSize(head(webpLossless(1, 16_384), "image/webp"))).toEqual({ width: 1, height: 16_384 });
    expect(imageSize(head(webpExtended(3000, 2000), "image/webp"))).toEqual({ width: 3000, height: 2000 });
    expect(imageSize(head(webpExtended(16_777_216, 1), "image/webp"))).toEqual({ width: 16_777_216, height: 1 });
  });

  it("walks JPEG segments past a large EXIF block and a DHT table", () => {
    const mime = "image/jpeg";
    expect(imageSize(head(jpeg(4032, 3024), mime))).toEqual({ width: 4032, height: 3024 });
    // Every alignment of the frame header against the base64 groups.
    for (const exifBytes of [30_000, 30_001, 30_002]) {
      expect(imageSize(head(jpeg(4032, 3024, { exifBytes }), mime))).toEqual({ width: 4032, height: 3024 });
    }
    // The largest APP1 a segment can hold still fits in the kept head.
    expect(imageSize(head(jpeg(1920, 1080, { exifBytes: 65_533 }), mime))).toEqual({ width: 1920, height: 1080 });
  });

  it("reads progressive (SOF2) and other frame types, and skips fill bytes", () => {
    const mime = "image/jpeg";
    expect(imageSize(head(jpeg(800, 533, { exifBytes: 30_000, sof: 0xc2 }), mime))).toEqual({
      width: 800,
      height: 533,
    });
    expect(imageSize(head(jpeg(10, 20, { sof: 0xc1, fill: 3 }), mime))).toEqual({ width: 10, height: 20 });
    expect(imageSize(head(jpeg(10, 20, { sof: 0xcf }), mime))).toEqual({ width: 10, height: 20 });
  });

  it("takes the format from the bytes, not the MIME type", () => {
    expect(imageSize(head(png(100, 50), "image/jpeg"))).toEqual({ width: 100, height: 50 });
  });

  it("accepts line-wrapped base64, data URLs and the URL-safe alphabet", () => {
    const b64 = jpeg(321, 123, { exifBytes: 3000 }).toString("base64");
    const wrapped = b64.replace(/.{76}/g, "$&\r\n");
    expect(imageSize({ mimeType: "image/jpeg", head: wrapped })).toEqual({ width: 321, height: 123 });
    expect(imageSize({ mimeType: "image/jpeg", head: `data:image/jpeg;base64,${b64}` })).toEqual({
      width: 321,
      height: 123,
    });
    const urlSafe = b64.replace(/\+/g, "-").replace(/\//g, "_");
    expect(imageSize({ mimeType: "image/jpeg", head: urlSafe })).toEqual({ width: 321, height: 123 });
  });

  it("reads the same with whitespace anywhere in the data as without it", () => {
    const images = [png(1280, 960), jpeg(4032, 3024, { exifBytes: 3001 }), gif(17, 9), webpLossy(640, 480)];
    const spaces = [" ", "\n", "\r\n", "\t", "\u00a0", "\u2028"];
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (const image of images) {
      const b64 = image.toString("base64");
      const expected = imageSize({ mimeType: "", head: b64 });
      expect(expected).toBeDefined();
      // Early (inside the header), late (past everything the reader needs) and in between.
      for (const at of [0, 1, 5, 31, 32, 200, b64.length - 1, ...Array.from({ length: 20 }, () => next(b64.length))]) {
        const space = spaces[next(spaces.length)] as string;
        const spaced = `${b64.slice(0, at)}${space}${b64.slice(at)}`;
        expect(imageSize({ mimeType: "", head: spaced }), `${space} at ${at}`).toEqual(expected);
      }
    }
    // A stray non-base64 character before the header is read still spoils it, wherever whitespace is.
    expect(imageSize({ mimeType: "", head: `*${png(10, 10).toString("base64")}\n` })).toBeUndefined();
  });

  it("gives undefined for truncated heads", () => {
    const pngB64 = png(1280, 960).toString("base64");
    // IHDR's height ends at byte 24, i.e. base64 character 32.
    expect(imageSize({ mimeType: "image/png", head: pngB64.slice(0, 32) })).toEqual({ width: 1280, height: 960 });
    for (const n of [0, 4, 11, 20, 30, 31]) {
      expect(imageSize({ mimeType: "image/png", head: pngB64.slice(0, n) })).toBeUndefined();
    }
    const jpegB64 = jpeg(4032, 3024, { exifBytes: 30_000 }).toString("base64");
    expect(imageSize({ mimeType: "image/jpeg", head: jpegB64.slice(0, 40_000) })).toBeUndefined();
    // A head cut to the kept length misses a frame header behind more than 64 KB of segments.
    const twoApps = bytes(
      [0xff, 0xd8],
      jpegSegment(0xe1, Buffer.alloc(65_000, 1)),
      jpegSegment(0xe2, Buffer.alloc(65_000, 2)),
      jpeg(10, 10).subarray(2),
    );
    expect(imageSize(head(twoApps, "image/jpeg"))).toBeUndefined();
    // GIF needs 10 bytes; every WebP variant needs at least 25.
    const cuts: Array<[Buffer, number]> = [
      [gif(10, 10), 12],
      [webpLossy(10, 10), 32],
      [webpLossless(10, 10), 32],
      [webpExtended(10, 10), 32],
    ];
    for (const [data, n] of cuts) {
      const b64 = data.toString("base64");
      expect(imageSize({ mimeType: "image/webp", head: b64 })).toEqual({ width: 10, height: 10 });
      expect(imageSize({ mimeType: "image/webp", head: b64.slice(0, n) })).toBeUndefined();
    }
  });

  it("gives undefined for corrupt or unknown data, never throwing", () => {
    const corrupt: string[] = [
      "",
      "!!!!",
      "not base64 at all ☃",
      Buffer.from("just some text, no image here").toString("base64"),
      Buffer.from([0x42, 0x4d, 0, 0, 0, 0]).toString("base64"), // BMP: not supported
      // PNG signature, then a chunk that is not IHDR, repeated.
      bytes(
        [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
        ...Array.from({ length: 6 }, () => pngChunk("tEXt", Buffer.alloc(4))),
      ).toString("base64"),
      png(0, 10).toString("base64"),
      // JPEG: SOI then scan data before any frame header.
      bytes([0xff, 0xd8], jpegSegment(0xda, Buffer.alloc(8)), [0xff, 0xd9]).toString("base64"),
      // JPEG: segment length below 2.
      bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01, 0, 0]).toString("base64"),
      // JPEG: garbage where a marker should be.
      bytes([0xff, 0xd8, 0x12, 0x34, 0x56]).toString("base64"),
      // JPEG frame header with height 0 (set later by DNL): no usable size.
      jpeg(100, 0).toString("base64"),
      // WebP with an unknown chunk type, and VP8 without its start code.
      riff("VP9 ", Buffer.alloc(20)).toString("base64"),
      riff("VP8 ", Buffer.alloc(20)).toString("base64"),
      riff("VP8L", Buffer.alloc(20)).toString("base64"),
      // Invalid characters inside the header bytes.
      `${png(10, 10).toString("base64").slice(0, 20)}@@@@${png(10, 10).toString("base64").slice(24)}`,
    ];
    for (const c of corrupt) {
      expect(imageSize({ mimeType: "image/png", head: c })).toBeUndefined();
      expect(imageTokens(imageSize({ mimeType: "image/png", head: c }))).toBe(IMAGE_FALLBACK_TOKENS);
    }
    expect(imageSize(undefined)).toBeUndefined();
    expect(imageSize({ mimeType: "image/png", head: 42 } as unknown as ImageHead)).toBeUndefined();
  });

  it("never throws on random bytes after a valid signature", () => {
    let seed = 12345;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed & 0xff;
    };
    const prefixes = [[0xff, 0xd8], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [...Buffer.from("GIF89a")]];
    for (let round = 0; round < 200; round++) {
      const prefix = prefixes[round % prefixes.length]!;
      const body = Array.from({ length: 64 + (round % 50) }, rnd);
      expect(() => imageSize({ mimeType: "", head: bytes(prefix, body).toString("base64") })).not.toThrow();
    }
  });
});

describe("imageTokens / imageChars", () => {
  it("counts one token per 750 pixels, rounded up", () => {
    expect(imageTokens({ width: 1280, height: 960 })).toBe(1639);
    expect(imageTokens({ width: 750, height: 1 })).toBe(1);
    expect(imageTokens({ width: 751, height: 1 })).toBe(2);
    expect(imageTokens({ width: 1, height: 1 })).toBe(1);
  });

  it("caps at 6,700 tokens", () => {
    expect(imageTokens({ width: 10_000, height: 10_000 })).toBe(IMAGE_MAX_TOKENS);
    expect(IMAGE_MAX_TOKENS).toBe(6700);
    // 2236 × 2247 = 5,024,292 px → 6,700 tokens exactly at the edge.
    expect(imageTokens({ width: 2236, height: 2247 })).toBe(6700);
    expect(imageTokens({ width: 2236, height: 2240 })).toBe(6679);
  });

  it("falls back to 1,600 tokens when the size is unknown", () => {
    expect(imageTokens(undefined)).toBe(1600);
    expect(imageTokens({ width: 0, height: 10 })).toBe(1600);
    expect(imageChars({ mimeType: "image/png", head: "garbage" })).toBe(6400);
    expect(imageChars(undefined)).toBe(6400);
  });

  it("turns tokens into characters at 4 per token", () => {
    expect(imageChars(head(png(1280, 960)))).toBe(1639 * 4);
    expect(imageChars(head(jpeg(8000, 6000, { exifBytes: 30_000 }), "image/jpeg"))).toBe(6700 * 4);
  });
});

describe("visibleChars", () => {
  const entry = (text: string, images: number, imageHeads?: ImageHead[]): SnapEntry => ({
    id: "x",
    type: "message",
    role: "toolResult",
    visible: true,
    text,
    images,
    ...(imageHeads ? { imageHeads } : {}),
  });

  it("is the text length without images", () => {
    expect(visibleChars(entry("hello", 0))).toBe(5);
  });

  it("adds each image by its size", () => {
    const heads = [head(png(1280, 960)), head(gif(75, 10), "image/gif")];
    expect(visibleChars(entry("abc", 2, heads))).toBe(3 + 1639 * 4 + 1 * 4);
  });

  it("uses the fallback for images without a head", () => {
    expect(visibleChars(entry("abc", 2))).toBe(3 + 2 * 6400);
    expect(visibleChars(entry("", 2, [head(png(1280, 960))]))).toBe(1639 * 4 + 6400);
  });
});
