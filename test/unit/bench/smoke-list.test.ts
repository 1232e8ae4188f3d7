import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RUN_APART, RUNNER, SMOKE } from "../../../bench/lib/smoke-list.ts";
import { REPO_ROOT } from "../../kit/pi-agent-dir.ts";

describe("bench smoke list", () => {
  it("names every script in bench/, so .ci/run runs each at its smallest size", () => {
    const scripts = readdirSync(join(REPO_ROOT, "bench")).filter((f) => f.endsWith(".ts"));
    const listed = new Set([...SMOKE.map((s) => s.script), ...RUN_APART, RUNNER]);
    expect(scripts.filter((s) => !listed.has(s))).toEqual([]);
    expect([...listed].filter((s) => !scripts.includes(s))).toEqual([]);
  });
});
