// Boundaries that come many times a second do not walk the registry's models each time; credentials
// are still checked on every lookup, and a registry change shows once the moment has passed.
import { describe, expect, it } from "vitest";
import { lookupClassifier } from "../../../../src/main/pass/classifier-lookup.ts";

function registry() {
  const state = { walks: 0, configured: true, model: { id: "jev-latest", provider: "typesafe" } as object | undefined };
  const reg = {
    findOfType: () => {
      state.walks++;
      return state.model;
    },
    getProviderAuthStatus: () => ({ configured: state.configured }),
  };
  return { state, reg: reg as never };
}

describe("lookupClassifier", () => {
  it("reuses the model found for a moment, checking credentials every time", () => {
    const { state, reg } = registry();
    expect(lookupClassifier(reg, "typesafe/jev-latest", 0).ok).toBe(true);
    expect(lookupClassifier(reg, "typesafe/jev-latest", 500).ok).toBe(true);
    expect(state.walks).toBe(1);
    state.configured = false;
    expect(lookupClassifier(reg, "typesafe/jev-latest", 600)).toMatchObject({ ok: false, problem: "no-key" });
    state.configured = true;
    state.model = undefined;
    // The failed lookup was not kept, and a new one sees the model gone.
    expect(lookupClassifier(reg, "typesafe/jev-latest", 700)).toMatchObject({ ok: false, problem: "not-found" });
  });

  it("looks again after the moment, and for another model", () => {
    const { state, reg } = registry();
    lookupClassifier(reg, "typesafe/jev-latest", 0);
    lookupClassifier(reg, "typesafe/other", 10);
    lookupClassifier(reg, "typesafe/other", 2_000);
    expect(state.walks).toBe(3);
  });
});
