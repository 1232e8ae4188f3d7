// The routing state: what is persisted, what a restore keeps, and the footer read from it.
import { describe, expect, it } from "vitest";
import {
  initialState,
  type RouterState,
  restoreState,
  routingStatus,
  toSnapshot,
} from "../../../../src/core/routing/routing-state.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";

const state = (extra: Partial<RouterState> = {}): RouterState => ({
  ...initialState(),
  skillsRouted: true,
  toolsRouted: true,
  loaded: new Map([
    ["pdf", { score: 0.9, turn: 2 }],
    ["docker", { score: 0.7, turn: 1 }],
  ]),
  pinned: new Set(["k8s", "git"]),
  surfaced: new Map([["browser", { score: null, turn: 3 }]]),
  hidden: new Set(["tavily_search", "tavily_extract"]),
  ...extra,
});

describe("the persisted snapshot", () => {
  it("is sorted, so the same state is the same entry", () => {
    expect(toSnapshot(state())).toEqual({
      v: 1,
      skillsRouted: true,
      toolsRouted: true,
      loaded: [
        { name: "docker", score: 0.7, turn: 1 },
        { name: "pdf", score: 0.9, turn: 2 },
      ],
      pinned: ["git", "k8s"],
      surfaced: [{ name: "browser", score: null, turn: 3 }],
      hidden: ["tavily_extract", "tavily_search"],
    });
  });

  it("a restore takes the snapshot's sets, keeps the session's facts and the tools hidden in this process", () => {
    const now = state({ failures: 1, staticReason: "failed", hidden: new Set(["x_tool"]) });
    const back = restoreState(now, toSnapshot(state()));
    expect(toSnapshot(back)).toEqual({ ...toSnapshot(state()), hidden: ["tavily_extract", "tavily_search", "x_tool"] });
    expect(back).toMatchObject({ failures: 1, staticReason: "failed" });
    expect(now.loaded.size).toBe(2); // the state it came from is untouched
  });

  it("a snapshot of another version (or none) restores Pi's default", () => {
    const back = restoreState(state(), { v: 2 } as never);
    expect(back).toMatchObject({ skillsRouted: false, toolsRouted: false });
    expect(back.loaded.size + back.pinned.size + back.surfaced.size).toBe(0);
    expect(back.hidden.size).toBe(2);
  });
});

describe("routingStatus", () => {
  const config = { ...DEFAULT_CONFIG, toolNamespaces: { browser: { prefix: "browser_" }, web: { prefix: "web_" } } };
  const routable = { skills: 4, namespaces: 2 };

  it("counts skills (loaded and pinned) and surfaced namespaces", () => {
    expect(routingStatus(state({ routable }), config)).toBe("🧭 4 skills · 1/2 ns");
    expect(routingStatus(state({ routable, frozen: true }), config)).toBe("🧭 4 skills · 1/2 ns (rate limited)");
    expect(routingStatus(state({ routable: { skills: 0, namespaces: 2 } }), config)).toBe("🧭 1/2 ns");
  });

  it("says why it is static", () => {
    const stat = (staticReason: string | undefined) =>
      routingStatus({ ...initialState(), routable, staticReason }, config);
    expect(stat("failed")).toBe("🧭 static (classifier errors)");
    expect(stat("no-key")).toBe("🧭 static (no classifier)");
    expect(stat("not-found")).toBe("🧭 static (no classifier)");
    expect(stat(undefined)).toBe("🧭 all skills");
    expect(routingStatus({ ...initialState(), routable: { skills: 0, namespaces: 1 } }, config)).toBe("🧭 all tools");
  });

  it("shows nothing while the guard is off or nothing can be routed; before a turn, a restored state counts", () => {
    expect(routingStatus(state({ routable }), { ...config, enabled: false })).toBeUndefined();
    expect(routingStatus(state({ routable: { skills: 0, namespaces: 0 } }), config)).toBeUndefined();
    expect(routingStatus(initialState(), config)).toBeUndefined();
    expect(routingStatus(state(), config)).toBe("🧭 4 skills · 1/2 ns");
  });
});
