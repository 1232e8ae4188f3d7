import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { nodeProblem } from "../../../../src/core/shared/node-version.ts";
import { REPO_ROOT } from "../../../kit/pi-agent-dir.ts";

describe("nodeProblem", () => {
  it("accepts 22.19 and newer, and names what to do otherwise", () => {
    expect(nodeProblem("22.19.0")).toBeUndefined();
    expect(nodeProblem("22.23.3")).toBeUndefined();
    expect(nodeProblem("24.0.0")).toBeUndefined();
    expect(nodeProblem("22.18.0")).toMatch(/needs Node 22\.19 or newer .*this is Node 22\.18\.0.*npx context-guard/);
    expect(nodeProblem("20.20.2")).toMatch(/this is Node 20\.20\.2/);
  });

  it("the built command says so in one line on the machine's Node 20, before loading anything else", async () => {
    const bin = join(REPO_ROOT, "dist/bin.js");
    const nodes = ["/usr/local/bin/node", "/usr/bin/node"];
    let old: string | undefined;
    for (const n of nodes) {
      try {
        const { stdout } = await promisify(execFile)(n, ["--version"]);
        if (!stdout.startsWith("v22") && !stdout.startsWith("v2")) continue;
        if (Number.parseInt(stdout.slice(1), 10) < 22) old = n;
      } catch {}
    }
    if (!old) return; // this machine has no older Node to try
    const out = await promisify(execFile)(old, [bin, "replay"]).catch((e: { code: number; stderr: string }) => e);
    expect((out as { code: number }).code).toBe(1);
    expect((out as { stderr: string }).stderr.trim().split("\n")).toHaveLength(1);
    expect((out as { stderr: string }).stderr).toMatch(/needs Node 22\.19/);
  });
});
