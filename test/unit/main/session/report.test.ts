// `/guard`'s report: the classifier problem named once, and routing's line where the caller gives one.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { statusReport } from "../../../../src/main/session/report.ts";

const base = {
  config: { ...DEFAULT_CONFIG, model: "openrouter/no-such" },
  savings: { chars: 0, items: 0 },
  branch: [],
  paused: { kind: "closed" } as const,
};

describe("statusReport", () => {
  it("names the model and its problem once", () => {
    const lines = statusReport({
      ...base,
      found: { ok: false, problem: "not-found", ref: "openrouter/no-such", provider: "openrouter" },
    }).split("\n");
    expect(lines[0]).toBe("context-guard on · model openrouter/no-such (not found)");
    const noKey = statusReport({
      ...base,
      found: { ok: false, problem: "no-key", ref: "openrouter/no-such", provider: "openrouter" },
    });
    expect(noKey.split("\n")[0]).toBe("context-guard on · model openrouter/no-such (no openrouter key)");
  });

  it("puts routing's line right after the passes' classifier line", () => {
    const lines = statusReport({
      ...base,
      found: { ok: true, local: true, ref: "local/lexical" },
      routing: "classifier for routing: 2 request(s) this session, 200 input tokens, $0.0000 · no skill loaded",
    }).split("\n");
    expect(lines[2]).toMatch(/^classifier for passes: 0 run\(s\)/);
    expect(lines[3]).toMatch(/^classifier for routing: 2 request\(s\)/);
  });
});
