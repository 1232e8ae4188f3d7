import { describe, expect, it } from "vitest";
import type { SnapEntry } from "../src/core/types.ts";
import { WorkerMirror } from "../src/main/worker-mirror.ts";
import { syncEntries } from "../src/workers/session-store.ts";

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

  it("always resends edited entries, and the unedited version after a revert", () => {
    const mirror = new WorkerMirror();
    const plain = entry("t", { role: "toolResult", text: "raw" });
    const s1 = mirror.prepare([plain]);
    mirror.accept((syncEntries(s1) as { storeId: string }).storeId, s1);
    const edited = entry("t", { role: "toolResult", text: "[context-guard] x", edited: true, rawText: "raw" });
    const s2 = mirror.prepare([edited]);
    expect(s2.fresh).toEqual([edited]);
    mirror.accept((syncEntries(s2) as { storeId: string }).storeId, s2);
    const s3 = mirror.prepare([plain]);
    expect(s3.fresh).toEqual([plain]);
    const r3 = syncEntries(s3);
    expect("entries" in r3 && r3.entries[0]?.text).toBe("raw");
  });

  it("asks for everything again when the store is not the one the mirror filled", () => {
    const r = syncEntries({ storeId: "some-replaced-worker", fresh: [], order: ["x", "y"] });
    expect(r).toMatchObject({ missing: ["x", "y"] });
    const mirror = new WorkerMirror();
    mirror.reset(r.storeId);
    const again = mirror.prepare([entry("x"), entry("y")]);
    expect(again.fresh).toHaveLength(2);
    expect("entries" in syncEntries(again)).toBe(true);
  });
});
