import { beforeEach, describe, expect, it } from "vitest";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { WorkerMirror } from "../../../../src/main/pass/worker-mirror.ts";
import type { SyncInput } from "../../../../src/workers/pass/protocol.ts";
import { SessionStores } from "../../../../src/workers/pass/session-store.ts";

// One thread's stores, as a worker holds them; clearStore empties the default one, as a new worker starts.
const stores = new SessionStores();
const syncEntries = (input: SyncInput) => stores.sync(input);
const clearStore = () => stores.clear();

const entry = (id: string, extra: Partial<SnapEntry> = {}): SnapEntry => ({
  id,
  type: "message",
  role: "user",
  visible: true,
  text: id,
  images: 0,
  ...extra,
});

describe("WorkerMirror + session store", () => {
  // Each test starts from an empty store, as a new worker does.
  beforeEach(() => clearStore());

  it("sends each stable entry once, then only ids", () => {
    const mirror = new WorkerMirror();
    const a = [entry("a"), entry("b")];
    const first = mirror.prepare(a);
    expect(first.fresh.map((e) => e.id)).toEqual(["a", "b"]);
    const r1 = syncEntries(first);
    if (!("entries" in r1)) throw new Error("missing");
    mirror.accept(r1.storeId, first);
    const second = mirror.prepare([...a, entry("c")]);
    expect(second.fresh.map((e) => e.id)).toEqual(["c"]);
    const r2 = syncEntries(second);
    expect("entries" in r2 && r2.entries.map((e) => e.text)).toEqual(["a", "b", "c"]);
  });

  it("resends an entry once it is edited, and the unedited version after a revert", () => {
    const mirror = new WorkerMirror();
    const plain = entry("t", { role: "toolResult", text: "raw" });
    const s1 = mirror.prepare([plain]);
    mirror.accept((syncEntries(s1) as { storeId: string }).storeId, s1);
    const edited = entry("t", { role: "toolResult", text: "[context-guard] x", edited: true, rawText: "raw" });
    const s2 = mirror.prepare([edited]);
    expect(s2.fresh.map((e) => e.id)).toEqual(["t"]);
    const r2 = syncEntries(s2);
    expect("entries" in r2 && r2.entries[0]).toEqual(edited);
    mirror.accept(r2.storeId, s2);
    const s3 = mirror.prepare([plain]);
    expect(s3.fresh).toEqual([plain]);
    const r3 = syncEntries(s3);
    expect("entries" in r3 && r3.entries[0]?.text).toBe("raw");
  });

  it("does not resend an edited entry the store already holds, and resends it when the edit changes", () => {
    const mirror = new WorkerMirror();
    const accept = (sync: ReturnType<WorkerMirror["prepare"]>) =>
      mirror.accept((syncEntries(sync) as { storeId: string }).storeId, sync);
    const edited = entry("e", { role: "toolResult", text: "[context-guard] x", edited: true, rawText: "raw" });
    const s1 = mirror.prepare([edited]);
    expect(s1.fresh).toEqual([edited]);
    accept(s1);
    // A new but equal snapshot object (Pi projects edited messages anew every time).
    expect(mirror.prepare([{ ...edited }]).fresh).toEqual([]);
    const reEdited = { ...edited, text: "[context-guard] y" };
    const s3 = mirror.prepare([reEdited]);
    expect(s3.fresh.map((e) => e.text)).toEqual(["[context-guard] y"]);
    accept(s3);
    const r = syncEntries(mirror.prepare([reEdited]));
    expect("entries" in r && r.entries[0]?.text).toBe("[context-guard] y");
  });

  it("sends an edit of an output the store holds without its raw text, and the store fills it in", () => {
    const mirror = new WorkerMirror();
    const accept = (sync: ReturnType<WorkerMirror["prepare"]>) =>
      mirror.accept((syncEntries(sync) as { storeId: string }).storeId, sync);
    const raw = "line\n".repeat(1000);
    const plain = entry("big", { role: "toolResult", text: raw });
    accept(mirror.prepare([plain]));
    const edited = entry("big", { role: "toolResult", text: "[context-guard] 2 lines", edited: true, rawText: raw });
    const s1 = mirror.prepare([edited]);
    expect(s1.fresh).toHaveLength(1);
    expect(s1.fresh[0]).not.toHaveProperty("rawText");
    expect(s1.fresh[0]).toMatchObject({ id: "big", rawFromStore: true });
    const r1 = syncEntries(s1);
    expect("entries" in r1 && r1.entries[0]).toEqual(edited);
    mirror.accept(r1.storeId, s1);
    // Unchanged: nothing travels; a second edit of the same output also goes without its raw text.
    expect(mirror.prepare([{ ...edited }]).fresh).toEqual([]);
    const again = { ...edited, text: "[context-guard] 1 line" };
    const s2 = mirror.prepare([again]);
    expect(s2.fresh[0]).toMatchObject({ rawFromStore: true });
    const r2 = syncEntries(s2);
    expect("entries" in r2 && r2.entries[0]).toEqual(again);
    mirror.accept(r2.storeId, s2);
    // Reverted: the unedited entry is sent whole.
    expect(mirror.prepare([plain]).fresh).toEqual([plain]);
  });

  it("asks for everything when the store lacks the raw text an edit counts on", () => {
    const r = syncEntries({
      fresh: [{ ...entry("never-sent"), edited: true, text: "x", rawFromStore: true }],
      order: { keep: 0, tail: ["never-sent"], version: 1 },
    });
    expect(r).toMatchObject({ missing: ["never-sent"] });
  });

  it("asks for everything again when the store is not the one the mirror filled", () => {
    const r = syncEntries({ storeId: "some-replaced-worker", fresh: [], order: { keep: 0, tail: ["x"], version: 1 } });
    expect(r).toHaveProperty("missing");
    const mirror = new WorkerMirror();
    mirror.reset(r.storeId);
    const again = mirror.prepare([entry("x"), entry("y")]);
    expect(again.fresh).toHaveLength(2);
    expect("entries" in syncEntries(again)).toBe(true);
  });

  it("joins a text sent in pieces, restarts it at offset 0, and asks for everything after a gap", () => {
    const text = "abcdefghij";
    const piece = (offset: number, part: string) => ({ id: "big", field: "text" as const, offset, part });
    // A pass that failed after two pieces leaves them behind; the next one starts the text over.
    syncEntries({ fresh: [], pieces: [piece(0, "abc"), piece(3, "XXX")] });
    const out = syncEntries({
      fresh: [{ ...entry("big"), text: "", textInPieces: true }],
      pieces: [piece(0, "abcd"), piece(4, "efghij")],
      order: { keep: 0, tail: ["big"], version: 1 },
    });
    expect("entries" in out && out.entries[0]?.text).toBe(text);
    expect(syncEntries({ base: 1, fresh: [], pieces: [piece(0, "ab"), piece(5, "fg")] })).toHaveProperty("missing");
  });
});
