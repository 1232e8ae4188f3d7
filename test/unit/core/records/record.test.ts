import { describe, expect, it } from "vitest";
import { buildRecord, recordDraft, summarizeRecord } from "../../../../src/core/records/record.ts";
import { RECORD_TYPE, type RecordResult } from "../../../../src/core/shared/types.ts";

const res = (over: Partial<RecordResult>): RecordResult => ({
  entryId: "r",
  tool: "bash",
  label: "bash `rg -n status`",
  outcome: "distilled",
  reason: "chunks",
  beforeChars: 36_100,
  afterChars: 1_200,
  jev: ["kw.15 focus=chunk_4:.52 keep 9/29"],
  ...over,
});

const input = (results: RecordResult[]) => ({
  phase: "run-end" as const,
  model: "openrouter/~typesafe/jev-latest",
  results,
  requests: 3,
  inputTokens: 12_000,
  costUsd: 0.0005,
  ms: 900,
  timedOut: false,
});

describe("buildRecord", () => {
  it("sums savings of distilled and removed results only", () => {
    const record = buildRecord(
      input([
        res({ beforeChars: 10_000, afterChars: 1_000 }),
        res({ outcome: "removed", beforeChars: 5_000, afterChars: 200 }),
        res({ outcome: "kept", reason: "whole-needed", beforeChars: 8_000, afterChars: 8_000 }),
        res({ outcome: "kept", reason: "not-worth", beforeChars: 8_000, afterChars: 3_000 }),
      ]),
    );
    expect(record.savedChars).toBe(9_000 + 4_800);
    expect(record).toMatchObject({
      v: 1,
      phase: "run-end",
      model: "openrouter/~typesafe/jev-latest",
      requests: 3,
      inputTokens: 12_000,
      costUsd: 0.0005,
      ms: 900,
      timedOut: false,
    });
    expect(record.results).toHaveLength(4);
  });

  it("wraps the record in a custom draft", () => {
    const record = buildRecord({ ...input([]), phase: "mid-run", timedOut: true });
    expect(record.savedChars).toBe(0);
    expect(recordDraft(record)).toEqual({ type: "custom", customType: RECORD_TYPE, data: record });
    expect(RECORD_TYPE).toBe("context-guard");
  });
});

describe("summarizeRecord", () => {
  it("prints one line per result with sizes, reason and traces", () => {
    const record = buildRecord(
      input([
        res({ jev: ["kw.15 focus=chunk_4:.52 keep 9/29", "kw.82 focus=whole:.71 keep all (whole-needed)"] }),
        res({
          label: "read src/a.ts",
          outcome: "kept",
          reason: "not-worth",
          beforeChars: 950,
          afterChars: 950,
          jev: [],
        }),
      ]),
    );
    expect(summarizeRecord(record)).toEqual([
      "[large] bash `rg -n status`: distilled 36.1k → 1.2k chars (chunks) kw.15 focus=chunk_4:.52 keep 9/29 | kw.82 focus=whole:.71 keep all (whole-needed)",
      "[large] read src/a.ts: kept 950 → 950 chars (not-worth)",
    ]);
  });
});
