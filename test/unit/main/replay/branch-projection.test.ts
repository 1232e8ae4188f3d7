// The replay's projection, kept entry by entry, equals Pi's buildSessionProjection of the whole branch
// after every entry (context edits that replace and omit, edits of edits, custom messages, compactions),
// and the drafts it appends are the entries Pi's SessionManager appends, or Pi's error.
import {
  buildSessionProjection,
  type ContextEditEntry,
  type SessionEntry,
  SessionManager,
} from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import type { ContextEditDraft } from "../../../../src/core/shared/types.ts";
import { BranchProjection } from "../../../../src/main/replay/branch-projection.ts";
import { generateSession } from "../../../kit/generate.ts";
import { mulberry32 } from "../../../kit/prng.ts";

const HEADER = { type: "session", version: 3, id: "s", timestamp: "2026-03-02T08:00:00.000Z", cwd: "/repo" };

/** A generated branch with context edits, custom messages and two compactions mixed in, one path. */
function mixedBranch(seed: number, size: number): SessionEntry[] {
  const rng = mulberry32(seed);
  const base = generateSession({ entries: size, seed }) as unknown as SessionEntry[];
  const out: SessionEntry[] = [];
  let n = 0;
  const add = (entry: Record<string, unknown>) => {
    const parentId = out[out.length - 1]?.id ?? null;
    out.push({ ...entry, parentId, timestamp: HEADER.timestamp } as SessionEntry);
  };
  const editable = () =>
    out.filter(
      (e) =>
        e.type === "custom_message" ||
        (e.type === "message" && ["user", "assistant", "toolResult"].includes((e.message as { role: string }).role)),
    );
  for (const entry of base) {
    add({ ...entry });
    const r = rng();
    const targets = editable();
    const target = targets[Math.floor(rng() * targets.length)];
    if (r < 0.15 && target) {
      const replacement = rng() < 0.3 ? null : { content: rng() < 0.5 ? `edited ${n}` : [{ type: "text", text: "x" }] };
      add({ type: "context_edit", id: `edit${n++}`, targetId: target.id, replacement });
    } else if (r < 0.2) {
      add({ type: "custom_message", id: `cm${n++}`, customType: "note", content: `note ${n}`, display: true });
    } else if (r < 0.21 && out.length > 10) {
      const kept = out[out.length - 1 - Math.floor(rng() * 8)] as SessionEntry;
      add({ type: "compaction", id: `c${n++}`, summary: "so far", firstKeptEntryId: kept.id, tokensBefore: 1 });
    } else if (r < 0.22) {
      add({ type: "custom", id: `rec${n++}`, customType: "context-guard", data: { n } });
    }
  }
  return out;
}

describe("BranchProjection", () => {
  it.each([1, 2, 3])("equals Pi's projection after every entry (seed %i)", (seed) => {
    const branch = mixedBranch(seed, 300);
    expect(branch.some((e) => e.type === "compaction")).toBe(true);
    expect(branch.filter((e) => e.type === "context_edit").length).toBeGreaterThan(20);
    const projection = new BranchProjection();
    const so: SessionEntry[] = [];
    for (const entry of branch) {
      so.push(entry);
      projection.add(entry, () => so);
      const pi = buildSessionProjection(so, entry.id).entries;
      expect(projection.entries).toEqual(pi);
    }
  });

  it("appends the drafts Pi appends, and fails where Pi fails", () => {
    const branch: SessionEntry[] = mixedBranch(4, 60).filter(
      (e) => e.type !== "compaction" && e.type !== "context_edit",
    );
    for (let i = 1; i < branch.length; i++) branch[i] = { ...branch[i], parentId: branch[i - 1]?.id } as SessionEntry;
    const projection = new BranchProjection();
    for (const [i, entry] of branch.entries()) projection.add(entry, () => branch.slice(0, i + 1));
    const user = branch.find((e) => e.type === "message" && (e.message as { role: string }).role === "user");
    const result = branch.find((e) => e.type === "message" && (e.message as { role: string }).role === "toolResult");
    const other = branch.find((e) => e.type === "model_change");
    const cases: ContextEditDraft[][] = [
      [
        { type: "context_edit", targetId: result?.id as string, replacement: { content: "distilled" } as never },
        { type: "context_edit", targetId: user?.id as string, replacement: null },
      ],
      [{ type: "context_edit", targetId: "nope", replacement: null }],
      [{ type: "context_edit", targetId: other?.id as string, replacement: null }],
      [{ type: "context_edit", targetId: result?.id as string, replacement: { bad: 1 } as never }],
    ];
    for (const drafts of cases) {
      const manager = SessionManager.inMemory("/repo", undefined, [HEADER as never, ...branch]);
      let piError: string | undefined;
      try {
        for (const d of drafts) manager.appendContextEdit(d.targetId, d.replacement);
        manager.appendCustomEntry("context-guard", { n: 1 });
      } catch (error) {
        piError = (error as Error).message;
      }
      let ours: SessionEntry[] = [];
      let ourError: string | undefined;
      try {
        ours = projection.entriesFor(drafts, "context-guard", { n: 1 });
      } catch (error) {
        ourError = (error as Error).message;
      }
      expect(ourError).toBe(piError);
      if (piError) continue;
      const theirs = manager.getEntries().slice(branch.length);
      // Ids and times are new in both; the chain, the targets and the replacements are Pi's.
      const shape = (list: SessionEntry[]) =>
        list.map((e, i) => ({
          ...e,
          id: i,
          timestamp: 0,
          parentId: i === 0 ? e.parentId : i - 1,
          ...(e.type === "context_edit" ? { targetId: (e as ContextEditEntry).targetId } : {}),
        }));
      expect(shape(ours)).toEqual(shape(theirs));
      expect(JSON.stringify(Object.keys(ours[0] as object))).toBe(JSON.stringify(Object.keys(theirs[0] as object)));
    }
  });
});
