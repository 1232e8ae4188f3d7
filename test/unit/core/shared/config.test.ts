import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import { parseModelRef } from "../../../../src/core/shared/model-ref.ts";

describe("normalizeConfig", () => {
  it("returns the defaults for nothing", () => {
    expect(normalizeConfig(undefined)).toEqual({ config: DEFAULT_CONFIG, warnings: [] });
  });

  it("keeps valid values", () => {
    const { config, warnings } = normalizeConfig({
      minResultChars: 6000,
      excludeTools: ["bash"],
      keepCitedFiles: true,
    });
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({ minResultChars: 6000, excludeTools: ["bash"], keepCitedFiles: true });
  });

  it("falls back per key with a warning that names the key", () => {
    const { config, warnings } = normalizeConfig({
      timeoutMs: "fast",
      concurrency: 0,
      keepWholeThreshold: 1.5,
      historyExchanges: 2.5,
      model: "no-slash",
      minRunChars: 1234,
    });
    expect(config.timeoutMs).toBe(DEFAULT_CONFIG.timeoutMs);
    expect(config.concurrency).toBe(DEFAULT_CONFIG.concurrency);
    expect(config.keepWholeThreshold).toBe(DEFAULT_CONFIG.keepWholeThreshold);
    expect(config.historyExchanges).toBe(DEFAULT_CONFIG.historyExchanges);
    expect(config.model).toBe(DEFAULT_CONFIG.model);
    expect(config.minRunChars).toBe(1234);
    for (const key of ["timeoutMs", "concurrency", "keepWholeThreshold", "historyExchanges", "model"]) {
      expect(warnings.filter((w) => w.startsWith(`${key}:`))).toHaveLength(1);
    }
    expect(warnings).toHaveLength(5);
  });

  it("warns once per key when every value is wrong", () => {
    const bad = Object.fromEntries(CONFIG_KEYS.map((k) => [k, { nope: true }]));
    const { config, warnings } = normalizeConfig(bad);
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(warnings).toHaveLength(CONFIG_KEYS.length);
  });

  it("warns about unknown keys and non-object settings", () => {
    expect(normalizeConfig({ minResultChar: 10 }).warnings).toEqual([
      'minResultChar: unknown setting, ignored (did you mean "minResultChars"?)',
    ]);
    expect(normalizeConfig({ zzz: 1 }).warnings).toEqual(["zzz: unknown setting, ignored"]);
    expect(normalizeConfig([1, 2]).warnings[0]).toMatch(/must be a JSON object/);
  });

  it("parses provider/id at the first slash", () => {
    expect(parseModelRef("openrouter/~typesafe/jev-latest")).toEqual({
      provider: "openrouter",
      id: "~typesafe/jev-latest",
    });
    expect(parseModelRef("nope")).toBeUndefined();
    expect(parseModelRef("/x")).toBeUndefined();
    expect(parseModelRef("x/")).toBeUndefined();
  });
});
