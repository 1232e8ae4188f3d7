// Security without Pi: the recall regex sandbox only ever treats a pattern as a pattern; well-known
// credential shapes are cut out of error text; telemetry and settings files are private (0600). The API key
// in a real session and the README's privacy section are checked in test/e2e/security.test.ts.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redact } from "../../src/core/shared/redact.ts";
import { saveSetting } from "../../src/main/platform/settings.ts";
import { Telemetry } from "../../src/main/platform/telemetry.ts";
import { matchLines, PatternError } from "../../src/workers/recall/regex-sandbox.ts";
import { propertyParams } from "../kit/arbitraries.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-sec-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------------------------------------------------
// The regex sandbox

describe("the recall regex sandbox", () => {
  const lines = ["alpha beta", "GAMMA", "", "x); process.exit(1); (", "😀 é \u0000 \ud800", "constructor", "__proto__"];

  it("treats any pattern as data: same matches as a plain RegExp, or a pattern error; no side effects", () => {
    const g = globalThis as { __cgCanary?: number };
    g.__cgCanary = 0;
    const patternArb = fc.oneof(
      fc.string({ maxLength: 40, unit: "binary" }),
      fc.constantFrom(
        '"); globalThis.__cgCanary = 1; ("',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the pattern is meant to look like code.
        "`${globalThis.__cgCanary = 1}`",
        "'); process.exit(1); //",
        "})(); globalThis.__cgCanary = 1; (() => {",
        "(?<x>a)\\k<x>",
        "(?<=a)l",
        "constructor",
        "__proto__",
        "[\\s\\S]*",
        "\\u{1F600}",
        "(a|b",
        "*",
      ),
    );
    const flagsArb = fc.constantFrom("", "i", "u", "m", "s", "iu", "x", "gg", "v");
    fc.assert(
      fc.property(patternArb, flagsArb, (source, flags) => {
        let expected: number[] | "error";
        try {
          const re = new RegExp(source, flags);
          expected = lines.flatMap((l, i) => (re.test(l) ? [i] : []));
        } catch {
          expected = "error";
        }
        let got: number[] | "error";
        try {
          got = matchLines(lines, source, flags, 1000);
        } catch (error) {
          expect(error).toBeInstanceOf(PatternError);
          got = "error";
        }
        expect(got).toEqual(expected);
        expect(g.__cgCanary).toBe(0);
      }),
      propertyParams(400),
    );
  });

  it("stops a catastrophic pattern at its time limit", () => {
    // Without the limit this backtracks for ages: the error naming the limit says it cut the match.
    expect(() => matchLines([`${"a".repeat(40)}!`], "^(a+)+$", "", 200)).toThrow(/took longer than 200 ms/);
  });

  it("returns plain arrays of this realm, never objects from the sandbox", () => {
    const hits = matchLines(["a", "b", "a"], "a", "", 1000);
    expect(Object.getPrototypeOf(hits)).toBe(Array.prototype);
    expect(hits).toEqual([0, 2]);
  });
});

// ------------------------------------------------------------------------------------------------------------
// The API key

describe("the API key", () => {
  it("well-known credential shapes are cut out of error text even without the key at hand", () => {
    expect(redact("401: Authorization: Bearer abc.def-123 was refused")).toBe(
      "401: Authorization: Bearer [redacted] was refused",
    );
    expect(redact('{"key":"sk-or-v1-0123456789abcdef"}')).toBe('{"key":"[redacted]"}');
    expect(redact("echo my-own-key-123456 here", ["my-own-key-123456"])).toBe("echo [redacted] here");
  });
});

// ------------------------------------------------------------------------------------------------------------
// File modes

describe("private files", () => {
  it("telemetry is created 0600 in a 0700 directory, and an older 0644 file is tightened", async () => {
    const fresh = join(dir, "tele", "sub", "t.jsonl");
    const t = new Telemetry({ getConfig: () => ({ telemetry: true, telemetryPath: fresh }) });
    t.record({ type: "pin", skill: "x" } as never);
    await t.flush();
    expect((await stat(fresh)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, "tele", "sub"))).mode & 0o777).toBe(0o700);
    const old = join(dir, "old.jsonl");
    await writeFile(old, "", { mode: 0o644 });
    const t2 = new Telemetry({ getConfig: () => ({ telemetry: true, telemetryPath: old }) });
    t2.record({ type: "pin", skill: "y" } as never);
    await t2.flush();
    expect((await stat(old)).mode & 0o777).toBe(0o600);
  });

  it("the settings file is written 0600, new or replacing a 0644 one", async () => {
    const fresh = join(dir, "settings", "context-guard.json");
    await saveSetting("enabled", false, fresh);
    expect((await stat(fresh)).mode & 0o777).toBe(0o600);
    const old = join(dir, "old-settings.json");
    await writeFile(old, "{}", { mode: 0o644 });
    await saveSetting("enabled", true, old);
    expect((await stat(old)).mode & 0o777).toBe(0o600);
  });
});
