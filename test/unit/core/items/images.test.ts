import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  collectImages,
  type ImageItem,
  imageDraft,
  imageResult,
  imageStub,
} from "../../../../src/core/items/images.ts";
import { DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import { visibleChars } from "../../../../src/core/shared/size.ts";
import { GUARD_MARKER, type ImageHead, type SnapEntry, type SnapToolCall } from "../../../../src/core/shared/types.ts";
import { assistantEntry, messageEntry, toolCall, userEntry } from "../../../kit/snap.ts";

// A real PNG header (signature, IHDR with CRC) for the given size.
function pngHead(width: number, height: number): ImageHead {
  const be = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
  const ihdr = Buffer.from([...Buffer.from("IHDR"), ...be(width), ...be(height), 8, 6, 0, 0, 0]);
  const data = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.from(be(13)),
    ihdr,
    Buffer.from(be(crc32(ihdr))),
  ]);
  return { mimeType: "image/png", head: data.toString("base64") };
}

let seq = 0;
const nextId = () => `e${++seq}`;

const user = (text: string, images = 0): SnapEntry =>
  userEntry(nextId(), text, {
    images,
    ...(images ? { imageHeads: Array.from({ length: images }, () => pngHead(1000, 1000)) } : {}),
  });
const assistant = (text: string, toolCalls: SnapToolCall[] = []): SnapEntry =>
  assistantEntry(nextId(), text, toolCalls);
const call = (id: string, name: string, args: Record<string, unknown> = {}): SnapToolCall => toolCall(id, name, args);
/** A tool result with image blocks; unlike the other tests' results it has no toolName or isError unless `extra` sets them. */
const result = (
  toolCallId: string,
  text: string,
  heads: Array<ImageHead | undefined>,
  extra: Partial<SnapEntry> = {},
): SnapEntry => {
  const known = heads.filter((h): h is ImageHead => h !== undefined);
  return messageEntry(nextId(), "toolResult", text, {
    images: heads.length,
    toolCallId,
    ...(known.length === heads.length && known.length > 0 ? { imageHeads: known } : {}),
    ...extra,
  });
};
const turns = (n: number): SnapEntry[] => Array.from({ length: n }, (_, i) => assistant(`turn ${i}`));

describe("config", () => {
  it("has imageKeepTurns, default 3, validated on its own", () => {
    expect(DEFAULT_CONFIG.imageKeepTurns).toBe(3);
    expect(normalizeConfig({ imageKeepTurns: 5 }).config.imageKeepTurns).toBe(5);
    const bad = normalizeConfig({ imageKeepTurns: 0, minRunChars: 1 });
    expect(bad.config.imageKeepTurns).toBe(3);
    expect(bad.config.minRunChars).toBe(1);
    expect(bad.warnings).toHaveLength(1);
    expect(bad.warnings[0]).toMatch(/^imageKeepTurns:/);
    expect(normalizeConfig({ imageKeepTurns: 2.5 }).config.imageKeepTurns).toBe(3);
    expect(normalizeConfig({ imageKeepTurns: 1001 }).config.imageKeepTurns).toBe(3);
  });
});

describe("collectImages", () => {
  it("collects a result that exactly imageKeepTurns assistant messages follow", () => {
    const shot = result("c1", "Screenshot saved.", [pngHead(1280, 960)], { toolName: "screenshot" });
    const entries = [
      user("look at the page"),
      assistant("", [call("c1", "screenshot", { url: "http://x" })]),
      shot,
      ...turns(3),
    ];
    const items = collectImages(entries, 3);
    expect(items).toHaveLength(1);
    const item = items[0]!;
    expect(item).toMatchObject({
      entryId: shot.id,
      tool: "screenshot",
      label: 'screenshot {"url":"http://x"}',
      images: 1,
      sizes: [{ width: 1280, height: 960 }],
      turnsOld: 3,
      text: "Screenshot saved.",
      beforePrompt: false,
    });
    expect(item.beforeChars).toBe("Screenshot saved.".length + 1639 * 4);
    expect(item.beforeChars).toBe(visibleChars(shot));
  });

  it("leaves a result that one assistant message fewer follows", () => {
    const entries = [
      user("go"),
      assistant("", [call("c1", "read", { path: "a.png" })]),
      result("c1", "", [pngHead(10, 10)]),
      ...turns(2),
    ];
    expect(collectImages(entries, 3)).toEqual([]);
    expect(collectImages(entries, 2)).toHaveLength(1);
  });

  it("counts only visible assistant messages", () => {
    const hidden: SnapEntry = { ...assistant("gone"), visible: false };
    const entries = [
      user("go"),
      assistant("", [call("c1", "read", { path: "a.png" })]),
      result("c1", "", [pngHead(10, 10)]),
      assistant("one"),
      hidden,
      user("next"),
      assistant("two"),
    ];
    expect(collectImages(entries, 3)).toEqual([]);
    expect(collectImages(entries, 2)[0]?.turnsOld).toBe(2);
  });

  it("labels from the matching call and falls back to the call's tool name", () => {
    const r = result("c9", "", [pngHead(10, 10)]);
    const entries = [user("go"), assistant("", [call("c9", "read", { path: "shots/home.png" })]), r, ...turns(3)];
    const [item] = collectImages(entries, 3);
    expect(item?.tool).toBe("read");
    expect(item?.label).toBe("read shots/home.png");

    const orphan = result("missing", "", [pngHead(10, 10)]);
    const [lone] = collectImages([orphan, ...turns(3)], 3);
    expect(lone?.tool).toBe("tool");
    expect(lone?.label).toBe("tool");
  });

  it("includes earlier runs and marks results before the prompt", () => {
    const old = result("c1", "old", [pngHead(10, 10)]);
    const recent = result("c2", "new", [pngHead(20, 20)]);
    const entries = [
      user("first"),
      assistant("", [call("c1", "read", { path: "a.png" })]),
      old,
      assistant("done"),
      user("second"), // index 4: the current run's prompt
      assistant("", [call("c2", "read", { path: "b.png" })]),
      recent,
      ...turns(3),
    ];
    const items = collectImages(entries, 3, 4);
    expect(items.map((i) => i.entryId)).toEqual([old.id, recent.id]);
    expect(items.map((i) => i.beforePrompt)).toEqual([true, false]);
    expect(items.map((i) => i.turnsOld)).toEqual([5, 3]);
    // Without a prompt index nothing is marked.
    expect(collectImages(entries, 3).every((i) => !i.beforePrompt)).toBe(true);
  });

  it("skips user images, other extensions' edits, images already gone and hidden results", () => {
    const entries = [
      user("here is the design", 2),
      assistant("", [call("c1", "read"), call("c2", "read"), call("c3", "read"), call("c4", "read")]),
      // Someone else rewrote the text.
      result("c1", "rewritten", [pngHead(10, 10)], { edited: true, rawText: "original", rawImages: 1 }),
      // Someone else dropped one of two images.
      result("c2", "same", [pngHead(10, 10)], { edited: true, rawText: "same", rawImages: 2 }),
      // Ours already: the marker leads and no images remain.
      result("c3", `${GUARD_MARKER} Removed 1 image from this output`, [], {
        edited: true,
        rawText: "",
        rawImages: 1,
      }),
      // Hidden (omitted with its exchange).
      { ...result("c4", "", [pngHead(10, 10)]), visible: false },
      // No images at all.
      result("c5", "text only", []),
      // A custom message with images is not a tool result.
      { ...result("c6", "", [pngHead(10, 10)]), role: "custom" as const, type: "custom_message" },
      ...turns(5),
    ];
    expect(collectImages(entries, 3)).toEqual([]);
  });

  it("collects an unedited result whose own text starts with the marker: only an edit is ours", () => {
    const forged = result("c1", `${GUARD_MARKER} Removed 1 image from this output`, [pngHead(10, 10)]);
    expect(collectImages([forged, ...turns(3)], 3).map((i) => i.entryId)).toEqual([forged.id]);
  });

  it("reads each image's size and keeps unknown ones as undefined", () => {
    const r = result("c1", "two shots", [pngHead(800, 600), { mimeType: "image/png", head: "broken" }]);
    const [item] = collectImages([r, ...turns(3)], 3);
    expect(item?.sizes).toEqual([{ width: 800, height: 600 }, undefined]);
    expect(item?.beforeChars).toBe("two shots".length + (640 + 1600) * 4);
    // No heads at all: every image falls back.
    const bare: SnapEntry = { ...r, id: "bare", imageHeads: undefined };
    const [b] = collectImages([bare, ...turns(3)], 3);
    expect(b?.sizes).toEqual([undefined, undefined]);
    expect(b?.beforeChars).toBe("two shots".length + 2 * 6400);
  });

  it("handles 10,000 entries in one linear pass", () => {
    const head = pngHead(1024, 768);
    const entries: SnapEntry[] = [user("start")];
    for (let i = 0; i < 3333; i++) {
      entries.push(assistant("", [call(`c${i}`, "screenshot")]));
      entries.push(result(`c${i}`, `shot ${i}`, [head]));
      entries.push(assistant(`looked at ${i}`));
    }
    expect(entries.length).toBe(10_000);
    const items = collectImages(entries, 3);
    // Each result has two assistant messages per later step after it, plus its own reply.
    expect(items.length).toBe(3332);
    expect(items[0]?.turnsOld).toBe(2 * 3333 - 1);
    expect(items.at(-1)?.turnsOld).toBe(3);
    expect(items.every((i) => i.tool === "screenshot")).toBe(true);
  });
});

describe("stub, draft and record", () => {
  const item = (over: Partial<ImageItem> = {}): ImageItem => {
    const base: ImageItem = {
      entryId: "abc123",
      tool: "read",
      label: "read shot.png",
      images: 1,
      sizes: [{ width: 1280, height: 960 }],
      turnsOld: 4,
      beforeChars: 10 + 1639 * 4,
      afterChars: 0,
      text: "Read image.",
      beforePrompt: false,
      ...over,
    };
    return base;
  };

  it("formats one image", () => {
    expect(imageStub(item())).toBe(
      '[context-guard] Removed 1 image from this output (1280×960; ~1.6k tokens), 4 turns old. recall({"entryId":"abc123"}) shows it again.',
    );
  });

  it("formats several images, unknown sizes included", () => {
    const stub = imageStub(item({ images: 2, sizes: [{ width: 800, height: 600 }, undefined], turnsOld: 12 }));
    expect(stub).toBe(
      '[context-guard] Removed 2 images from this output (800×600, size unknown; ~2.2k tokens), 12 turns old. recall({"entryId":"abc123"}) shows it again.',
    );
  });

  it("shows small token counts without a suffix and lists at most five sizes", () => {
    const s = { width: 100, height: 100 };
    const stub = imageStub(item({ images: 7, sizes: Array.from({ length: 7 }, () => s), turnsOld: 1 }));
    expect(stub).toContain("(100×100, 100×100, 100×100, 100×100, 100×100 and 2 more; ~98 tokens), 1 turn old.");
  });

  it("escapes the entry id as JSON", () => {
    expect(imageStub(item({ entryId: 'we"ird' }))).toContain('recall({"entryId":"we\\"ird"})');
  });

  it("builds a text-only draft that leads with the stub", () => {
    const it1 = item();
    const draft = imageDraft(it1);
    expect(draft.type).toBe("context_edit");
    expect(draft.targetId).toBe("abc123");
    const content = draft.replacement?.content ?? [];
    expect(content.every((b) => b.type === "text")).toBe(true);
    expect(content.map((b) => b.text)).toEqual([imageStub(it1), "Read image."]);
    expect(content[0]?.text.startsWith(GUARD_MARKER)).toBe(true);

    const empty = imageDraft(item({ text: "" }));
    expect(empty.replacement?.content).toEqual([{ type: "text", text: imageStub(item()) }]);
  });

  it("measures the replacement as the snapshot will see it", () => {
    const r = result("c1", "line one\nline two", [pngHead(1280, 960)]);
    const [collected] = collectImages([assistant("", [call("c1", "read", { path: "x.png" })]), r, ...turns(3)], 3);
    expect(collected).toBeDefined();
    const content = imageDraft(collected!).replacement!.content;
    // Pi's projection joins text blocks with "\n", as the snapshot does.
    const shown: SnapEntry = { ...r, text: content.map((b) => b.text).join("\n"), images: 0, imageHeads: undefined };
    expect(collected!.afterChars).toBe(visibleChars(shown));
    expect(collected!.afterChars).toBeLessThan(collected!.beforeChars);

    const bare = result("c2", "", [pngHead(10, 10)]);
    const [b] = collectImages([bare, ...turns(3)], 3);
    expect(b?.afterChars).toBe(imageStub(b!).length);
  });

  it("records a removal", () => {
    expect(imageResult(item({ afterChars: 150 }))).toEqual({
      kind: "image",
      entryId: "abc123",
      tool: "read",
      label: "read shot.png",
      outcome: "removed",
      reason: "4 turns old",
      beforeChars: 10 + 1639 * 4,
      afterChars: 150,
      jev: [],
    });
    expect(imageResult(item({ turnsOld: 1 })).reason).toBe("1 turn old");
  });
});
