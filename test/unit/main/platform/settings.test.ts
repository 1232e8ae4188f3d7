// The settings file against what a user's disk may hold (issue 23, break 7): a symbolic link into a
// dotfiles folder, a read-only file, a FIFO, /dev/zero, a huge file, and text that a parse-and-stringify
// would change (comments, big numbers, 1e999, duplicate keys). Saving edits only the one value or writes
// nothing; reading never blocks and never reads more than 1 MiB (/guard on|off and a FIFO under `pi -p` in
// the real Pi: test/e2e/settings-file.test.ts). Also break 11: keys named like Object.prototype members are
// reported as unknown, and usage sums that overflow never reach a record as null.
import { execFileSync } from "node:child_process";
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildRecord } from "../../../../src/core/records/record.ts";
import { DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { runPass } from "../../../../src/main/pass/library-run-pass.ts";
import { createTaskRunner } from "../../../../src/main/platform/pool.ts";
import { loadSettings, MAX_SETTINGS_BYTES, saveSetting } from "../../../../src/main/platform/settings.ts";
import { dropAll } from "../../../kit/answers.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

// The settings as a user gets them: without the test run's environment default (vitest.config.ts).
const envBudget = process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS;
delete process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS;
afterAll(() => {
  if (envBudget !== undefined) process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS = envBudget;
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-settings-file-"));
});

/** A fresh folder per test, so leftover temp files are easy to see. */
async function folder(name: string): Promise<string> {
  const path = join(dir, name);
  await mkdir(path, { recursive: true });
  return path;
}

const tmpFiles = async (path: string) => (await readdir(path)).filter((f) => f.endsWith(".tmp"));

describe("settings file", () => {
  it("loads, falls back on invalid JSON, and saves atomically keeping unknown keys", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-settings-"));
    const path = join(dir, "context-guard.json");
    expect((await loadSettings(path)).warnings).toEqual([]);
    await writeFile(path, "{ not json");
    const broken = await loadSettings(path);
    expect(broken.config).toEqual(DEFAULT_CONFIG);
    expect(broken.warnings[0]).toMatch(/not valid JSON/);
    await writeFile(path, JSON.stringify({ custom: "keep me", minResultChars: 5000 }));
    await saveSetting("enabled", false, path);
    const saved = JSON.parse(await readFile(path, "utf8"));
    expect(saved).toEqual({ custom: "keep me", minResultChars: 5000, enabled: false });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const loaded = await loadSettings(path);
    expect(loaded.config.enabled).toBe(false);
    expect(loaded.warnings).toEqual(["custom: unknown setting, ignored"]);
  });
});

describe("saving through a symbolic link", () => {
  it("writes the link's target, atomically next to it, keeping its mode, and leaves the link a link", async () => {
    const dotfiles = await folder("dotfiles");
    const agent = await folder("agent-link");
    const target = join(dotfiles, "context-guard.json");
    const link = join(agent, "context-guard.json");
    const text = '{\n  "enabled": true,\n  "minResultChars": 5000\n}\n';
    await writeFile(target, text);
    await chmod(target, 0o644);
    await symlink(target, link);

    const saved = await saveSetting("enabled", false, link);
    expect(saved).toEqual({ file: await realpath(target), changed: true });
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(target, "utf8")).toBe(text.replace('"enabled": true', '"enabled": false'));
    expect((await stat(target)).mode & 0o777).toBe(0o644);
    expect(await tmpFiles(dotfiles)).toEqual([]);
    expect(await tmpFiles(agent)).toEqual([]);
    expect((await loadSettings(link)).config.enabled).toBe(false);
  });

  it.skipIf(process.getuid?.() !== 0)("run as root, the replaced target keeps its owner", async () => {
    const dotfiles = await folder("dotfiles-owner");
    const target = join(dotfiles, "context-guard.json");
    const link = join(await folder("agent-owner"), "context-guard.json");
    await writeFile(target, '{"enabled":true}');
    await chown(target, 4242, 4343);
    await symlink(target, link);
    await saveSetting("enabled", false, link);
    const info = await stat(target);
    expect([info.uid, info.gid]).toEqual([4242, 4343]);
    expect(await readFile(target, "utf8")).toBe('{"enabled":false}');
  });

  it("refuses a link whose target does not exist, creating nothing", async () => {
    const agent = await folder("agent-dangling");
    const link = join(agent, "context-guard.json");
    const missing = join(dir, "nowhere", "context-guard.json");
    await symlink(missing, link);
    await expect(saveSetting("enabled", false, link)).rejects.toThrow(
      /is a symbolic link to .*nowhere.*, which does not exist; it was left as it is/,
    );
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    await expect(stat(missing)).rejects.toThrow(/ENOENT/);
  });
});

describe("a read-only settings file", () => {
  it("is never replaced (even by root): saving throws and the file keeps its bytes and mode", async () => {
    const path = join(await folder("read-only"), "context-guard.json");
    const text = '{ "enabled": true }';
    await writeFile(path, text);
    await chmod(path, 0o444);
    const before = await stat(path);
    await expect(saveSetting("enabled", false, path)).rejects.toThrow(
      /context-guard\.json is read-only \(mode 0444\); it was left as it is/,
    );
    const after = await stat(path);
    expect(await readFile(path, "utf8")).toBe(text);
    expect(after.mode & 0o777).toBe(0o444);
    expect(after.ino).toBe(before.ino);
    expect(await tmpFiles(join(path, ".."))).toEqual([]);
  });
});

describe("a settings path that is not a regular file", () => {
  it("a FIFO: loading returns the defaults with a warning at once; saving refuses; it stays a FIFO", async () => {
    const path = join(await folder("fifo"), "context-guard.json");
    execFileSync("mkfifo", [path]);
    const loaded = await loadSettings(path);
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
    expect(loaded.warnings).toEqual([
      `cannot read ${path}: it is a FIFO (named pipe), not a regular file; using the defaults`,
    ]);
    await expect(saveSetting("enabled", false, path)).rejects.toThrow(/FIFO.*it was left as it is/);
    expect((await lstat(path)).isFIFO()).toBe(true);
  }, 20_000);

  it("a symbolic link to a FIFO is refused the same way", async () => {
    const here = await folder("fifo-link");
    const fifo = join(here, "pipe");
    const link = join(here, "context-guard.json");
    execFileSync("mkfifo", [fifo]);
    await symlink(fifo, link);
    expect((await loadSettings(link)).warnings[0]).toMatch(/FIFO \(named pipe\), not a regular file/);
    await expect(saveSetting("enabled", false, link)).rejects.toThrow(/FIFO/);
    expect((await lstat(fifo)).isFIFO()).toBe(true);
  }, 20_000);

  it("/dev/zero: refused before anything is read", async () => {
    const loaded = await loadSettings("/dev/zero");
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
    expect(loaded.warnings).toEqual([
      "cannot read /dev/zero: it is a character device, not a regular file; using the defaults",
    ]);
    await expect(saveSetting("enabled", false, "/dev/zero")).rejects.toThrow(/character device/);
  });

  it("a directory keeps its EISDIR warning", async () => {
    const path = await folder("a-directory");
    expect((await loadSettings(path)).warnings).toEqual([
      `cannot read ${path} (EISDIR): it is a directory, not a regular file; using the defaults`,
    ]);
  });
});

describe("a settings file over 1 MiB", () => {
  it("is not read (a warning names it) and not written", async () => {
    const path = join(await folder("big"), "context-guard.json");
    const text = `{ "enabled": true, "pad": "${"x".repeat(MAX_SETTINGS_BYTES)}" }`;
    await writeFile(path, text);
    const loaded = await loadSettings(path);
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
    expect(loaded.warnings).toHaveLength(1);
    expect(loaded.warnings[0]).toBe(
      `${path} is ${Buffer.byteLength(text)} bytes, more than the 1 MiB a settings file may have; using the defaults`,
    );
    await expect(saveSetting("enabled", false, path)).rejects.toThrow(/more than the 1 MiB.*left as it is/);
    expect(await readFile(path, "utf8")).toBe(text);
  });

  it("one just under the cap is read", async () => {
    const path = join(await folder("just-under"), "context-guard.json");
    const head = '{ "minResultChars": 5000 }';
    await writeFile(path, head + " ".repeat(MAX_SETTINGS_BYTES - head.length));
    const loaded = await loadSettings(path);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config.minResultChars).toBe(5000);
  });
});

describe("saving changes only the one value", () => {
  const edit = async (name: string, text: string, value: boolean) => {
    const path = join(await folder(name), "context-guard.json");
    await writeFile(path, text);
    const saved = await saveSetting("enabled", value, path);
    return { path, saved, after: await readFile(path, "utf8") };
  };

  it("comments, big numbers, 1e999, escapes, spacing and key order stay byte for byte", async () => {
    const text = [
      "// context-guard, tuned by hand",
      "{",
      '    "budget": 123456789012345678901234567890, /* more than 2^53 */',
      '    "far": 1e999,',
      '    "tiny": 1e-400, "neg": -0, "float": 1.50,',
      '    "escaped": "caf\\u00e9 \\/ //not a comment",',
      '    "enabled"  :   true   , // the switch',
      '    "nested": { "enabled": true }',
      "}",
      "",
    ].join("\n");
    const { after, saved } = await edit("bytes", text, false);
    expect(saved.changed).toBe(true);
    expect(after).toBe(text.replace('"enabled"  :   true', '"enabled"  :   false'));
    const loaded = await loadSettings(join(dir, "bytes", "context-guard.json"));
    expect(loaded.config.enabled).toBe(false);
  });

  it("plain JSON: numbers a parse would round (2^53+, 1e999, 1.50) are not rewritten", async () => {
    const text = '{"budget":123456789012345678901234567890,"far":1e999,"float":1.50,"enabled":true,"x":[1e400]}';
    const { after } = await edit("numbers", text, false);
    expect(after).toBe(text.replace('"enabled":true', '"enabled":false'));
  });

  it("a missing key is added with the file's own indentation and line ending; the rest is kept", async () => {
    const text = '\uFEFF{\r\n\t"minResultChars": 5000,\r\n\t"big": 99999999999999999999\r\n}\r\n';
    const { after } = await edit("crlf-bom", text, false);
    expect(after).toBe(
      '\uFEFF{\r\n\t"minResultChars": 5000,\r\n\t"big": 99999999999999999999,\r\n\t"enabled": false\r\n}\r\n',
    );
  });

  it("a value already set is not written at all", async () => {
    const path = join(await folder("unchanged"), "context-guard.json");
    const text = '{"enabled":false}';
    await writeFile(path, text, { mode: 0o644 });
    const before = await stat(path);
    expect(await saveSetting("enabled", false, path)).toEqual({ file: path, changed: false });
    const after = await stat(path);
    expect(after.ino).toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o644);
  });

  it("a file that sets the key twice is refused, byte for byte as it was", async () => {
    const text = '{ "enabled": true, "minResultChars": 5000, "enabled": false }';
    const path = join(await folder("duplicate"), "context-guard.json");
    await writeFile(path, text);
    await expect(saveSetting("enabled", true, path)).rejects.toThrow(
      /has "enabled" 2 times \(keep one, then retry\); it was left as it is/,
    );
    expect(await readFile(path, "utf8")).toBe(text);
  });

  it("a file with comments is read, not refused as invalid JSON", async () => {
    const path = join(await folder("comments"), "context-guard.json");
    await writeFile(path, '/* mine */ { "minResultChars": 6000 // more\n}');
    const loaded = await loadSettings(path);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config.minResultChars).toBe(6000);
  });

  it("invalid JSON, a trailing comma or a non-object is still refused and still loads the defaults", async () => {
    for (const [name, text, why] of [
      ["trailing-comma", '{ "enabled": true, }', /not valid JSON/],
      ["half", '{ "enabled": ', /not valid JSON/],
      ["array", "[true]", /not a JSON object/],
    ] as const) {
      const path = join(await folder(name), "context-guard.json");
      await writeFile(path, text);
      await expect(saveSetting("enabled", false, path)).rejects.toThrow(why);
      expect(await readFile(path, "utf8")).toBe(text);
      expect((await loadSettings(path)).config).toEqual(DEFAULT_CONFIG);
    }
  });
});

describe("break 11: config keys named like Object.prototype members", () => {
  it("are reported as unknown and change nothing", () => {
    const raw = JSON.parse(
      '{"constructor": 1, "toString": "x", "__proto__": {"enabled": false}, "hasOwnProperty": true, "valueOf": 0}',
    );
    const { config, warnings } = normalizeConfig(raw);
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(warnings).toEqual([
      "constructor: unknown setting, ignored",
      "toString: unknown setting, ignored",
      "__proto__: unknown setting, ignored",
      "hasOwnProperty: unknown setting, ignored",
      "valueOf: unknown setting, ignored",
    ]);
  });

  it("an inherited value is not a setting", () => {
    const raw = Object.create({ enabled: false, minResultChars: 10 });
    expect(normalizeConfig(raw)).toEqual({ config: DEFAULT_CONFIG, warnings: [] });
  });

  it("a namespace named __proto__ is dropped with a warning; the others are kept", () => {
    const raw = JSON.parse('{"toolNamespaces": {"__proto__": {"prefix": "x_"}, "git": {"prefix": "git_"}}}');
    const { config, warnings } = normalizeConfig(raw);
    expect(Object.getPrototypeOf(config.toolNamespaces)).toBe(Object.prototype);
    expect(Object.keys(config.toolNamespaces)).toEqual(["git"]);
    expect(config.toolNamespaces.git).toEqual({ prefix: "git_" });
    expect(warnings).toEqual(["toolNamespaces.__proto__: not valid (a reserved name); this namespace is dropped"]);
  });
});

describe("break 11: usage totals in records", () => {
  it("a record never holds Infinity or NaN (JSON would store null)", () => {
    const base = { phase: "run-end" as const, model: "t/t", results: [], requests: 2, ms: 1, timedOut: false };
    const over = buildRecord({ ...base, inputTokens: Number.POSITIVE_INFINITY, costUsd: Number.NaN });
    expect(over.inputTokens).toBe(Number.MAX_SAFE_INTEGER);
    expect(over.costUsd).toBe(0);
    expect(JSON.stringify(over)).not.toContain("null");
    const big = buildRecord({ ...base, inputTokens: 1e300, costUsd: 12.5 });
    expect(big.inputTokens).toBe(Number.MAX_SAFE_INTEGER);
    expect(big.costUsd).toBe(12.5);
  });

  it("a pass whose calls report 1e308 tokens each records a capped number, and skips non-finite ones", async () => {
    const runner = await createTaskRunner({ minThreads: 1, maxThreads: 1 });
    try {
      const lines = (tag: string) =>
        Array.from({ length: 300 }, (_, i) => `src/${tag}${i % 20}.ts:${i}:cold() // ${"x".repeat(30)}`).join("\n");
      const entries = [
        userEntry("u", "where is hot_symbol?"),
        assistantEntry("a", "", [
          toolCall("c0", "bash", { command: "one" }),
          toolCall("c1", "bash", { command: "two" }),
        ]),
        toolResultEntry("t0", "c0", "bash", lines("a")),
        toolResultEntry("t1", "c1", "bash", lines("b")),
        assistantEntry("z", "done"),
      ];
      let calls = 0;
      const classify: ClassifyFn = async (request, opts) => {
        calls++;
        const outcome = await dropAll(request, opts);
        return calls === 1
          ? { ...outcome, inputTokens: 1e308, costUsd: 1e308 }
          : { ...outcome, inputTokens: calls === 2 ? 1e308 : Number.NaN, costUsd: Number.POSITIVE_INFINITY };
      };
      const out = await runPass(
        entries,
        { runner, classify, config: DEFAULT_CONFIG, modelRef: "t/t" },
        { phase: "run-end" },
      );
      expect(out.status).toBe("done");
      if (out.status !== "done") return;
      expect(calls).toBeGreaterThanOrEqual(2);
      expect(out.record.inputTokens).toBe(Number.MAX_SAFE_INTEGER);
      expect(out.record.costUsd).toBe(Number.MAX_SAFE_INTEGER);
      const stored = JSON.parse(JSON.stringify(out.recordDraft.data));
      expect(stored.inputTokens).toBe(Number.MAX_SAFE_INTEGER);
      expect(stored.costUsd).toBe(Number.MAX_SAFE_INTEGER);
    } finally {
      await runner.destroy();
    }
  });
});
