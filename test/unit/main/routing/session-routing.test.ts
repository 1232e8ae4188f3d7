// `/guard`'s routing line: routing's own classifier requests this session and the skills it loaded.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import { Telemetry } from "../../../../src/main/platform/telemetry.ts";
import { SessionRouting } from "../../../../src/main/routing/session-routing.ts";

function routing(overrides: Partial<GuardConfig> = {}) {
  const config: GuardConfig = { ...DEFAULT_CONFIG, telemetry: false, ...overrides };
  return new SessionRouting({
    pi: {} as never,
    getConfig: () => config,
    classifier: () => undefined,
    telemetry: new Telemetry({ getConfig: () => config }),
  });
}

describe("SessionRouting.reportLine", () => {
  it("counts routing's requests and names loaded and pinned skills", () => {
    const r = routing();
    Object.assign(r.router.usage, { requests: 3, inputTokens: 1200, costUsd: 0.00042 });
    r.router.loaded.set("pdf-tools", { score: 0.9, turn: 1 });
    r.router.pinned.add("docker");
    expect(r.reportLine()).toBe(
      "classifier for routing: 3 requests this session, 1.2k input tokens, $0.0004 · skills loaded: pdf-tools, docker (pinned)",
    );
  });

  it("says no skill is loaded, and nothing at all when there is nothing to route", () => {
    const r = routing();
    expect(r.reportLine()).toMatch(/0 requests this session.* · no skill loaded$/);
    r.router.routable = { skills: 0, namespaces: 0 };
    expect(r.reportLine()).toBeUndefined();
    expect(routing({ routeSkills: false }).reportLine()).toBeUndefined();
  });
});
