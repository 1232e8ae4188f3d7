// `context-guard replay --write` and the terminal summary against hostile targets and strings, through
// the CLI as a user runs it: the input as its own target (by name, symlink and hard link), a folder,
// /dev/full, a write cut short by a file size limit, and ESC / OSC 52 in a model name and a file name.
import { execFile } from "node:child_process";
import { copyFile, link, mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const REPO_ROOT = join(import.meta.dirname, "../..");
const CLI = join(REPO_ROOT, "src", "cli.ts");
const SAMPLE = join(REPO_ROOT, "bench", "sample", "session.jsonl");

let dir: string;
let env: NodeJS.ProcessEnv;
let sample: Buffer;

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

async function exec(file: string, args: string[]): Promise<Out> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd: dir, env, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

const cli = (args: string[]) => exec(process.execPath, [CLI, "replay", ...args, "--model", "local/lexical"]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-replay-write-"));
  env = { ...process.env, PI_CODING_AGENT_DIR: join(dir, "agent"), PI_OFFLINE: "1" };
  for (const key of Object.keys(env)) if (/_API_KEY$/.test(key)) delete env[key];
  delete env.PI_CONTEXT_GUARD_CONFIG;
  sample = await readFile(SAMPLE);
});

/** Byte equality: `toEqual` on two 1.3 MB Buffers walks them byte by byte and takes seconds. */
const sameAsSample = async (file: string) => (await readFile(file)).equals(sample);

/** A fresh copy of the sample session in its own folder. */
async function copyOfSample(name: string): Promise<{ folder: string; input: string }> {
  const folder = await mkdtemp(join(dir, `${name}-`));
  const input = join(folder, "session.jsonl");
  await copyFile(SAMPLE, input);
  return { folder, input };
}

describe("replay --write", () => {
  it("refuses its own input by name, through a symlink and through a hard link, before replaying", async () => {
    const { folder, input } = await copyOfSample("self");
    const viaLink = join(folder, "alias.jsonl");
    const viaHard = join(folder, "hard.jsonl");
    await symlink(input, viaLink);
    await link(input, viaHard);
    for (const target of [input, viaLink, viaHard]) {
      const out = await cli([input, "--write", target, "--out", join(folder, "r.html")]);
      expect(out.code).not.toBe(0);
      expect(out.stderr).toContain("is the session being replayed");
      // Refused before the replay: no summary, no report.
      expect(out.stdout).toBe("");
      expect(await sameAsSample(input)).toBe(true);
    }
    expect((await readdir(folder)).sort()).toEqual(["alias.jsonl", "hard.jsonl", "session.jsonl"]);
  });

  it("a folder or /dev/full as target fails at once with a clear message", async () => {
    const { folder, input } = await copyOfSample("bad-target");
    const sub = join(folder, "out");
    await mkdir(sub);
    const onFolder = await cli([input, "--write", sub, "--out", join(folder, "r.html")]);
    expect(onFolder.code).not.toBe(0);
    expect(onFolder.stderr).toContain("is a folder");
    expect(onFolder.stdout).toBe("");
    const onDevice = await cli([input, "--write", "/dev/full", "--out", join(folder, "r.html")]);
    expect(onDevice.code).not.toBe(0);
    expect(onDevice.stderr).toContain("is not a regular file");
    expect(onDevice.stdout).toBe("");
    const noFolder = await cli([input, "--write", join(folder, "missing", "x.jsonl"), "--out", join(folder, "r.html")]);
    expect(noFolder.code).not.toBe(0);
    expect(noFolder.stderr).toContain("cannot create a file in");
    expect(await sameAsSample(input)).toBe(true);
    expect((await readdir(folder)).sort()).toEqual(["out", "session.jsonl"]);
  }, 180_000);

  it("a write cut short by a file size limit leaves the target and the input as they were", async () => {
    const { folder, input } = await copyOfSample("fsize");
    const target = join(folder, "guarded.jsonl");
    const before = '{"type":"session","id":"an earlier file"}\n';
    await writeFile(target, before);
    // The guarded session is larger than the sample (1.3 MB); the limit is 1000 KiB.
    const out = await exec("bash", [
      "-c",
      `ulimit -f 1000; exec "$0" "$@"`,
      process.execPath,
      CLI,
      "replay",
      input,
      "--model",
      "local/lexical",
      "--write",
      target,
      "--out",
      join(folder, "r.html"),
    ]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("writing failed");
    expect(out.stderr).toContain("is as it was");
    // The replay's work is not lost: the summary and the report are there.
    expect(out.stdout).toContain("billed context");
    expect(await readFile(target, "utf8")).toBe(before);
    expect(await sameAsSample(input)).toBe(true);
    expect((await readdir(folder)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("replaces an existing target whole when the write succeeds", async () => {
    const { folder, input } = await copyOfSample("ok");
    const target = join(folder, "guarded.jsonl");
    await writeFile(target, "old\n");
    const out = await cli([input, "--write", target, "--out", join(folder, "r.html")]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`guarded session: ${target}`);
    const lines = (await readFile(target, "utf8")).split("\n");
    expect(lines.at(-1)).toBe("");
    expect(JSON.parse(lines[0] as string).type).toBe("session");
    expect(lines.length).toBeGreaterThan(260);
    expect(await sameAsSample(input)).toBe(true);
  });
});

describe("the terminal summary and the report with control sequences from the session", () => {
  it("shows ESC and OSC 52 in a model name and a file name as visible escapes", async () => {
    const folder = await mkdtemp(join(dir, "esc-"));
    const osc52 = "\u001b]52;c;cm0gLXJmIH4=\u0007";
    const model = `evil\u001b[2J${osc52}\u202emodel`;
    const lines = sample
      .toString("utf8")
      .split("\n")
      .map((line) => {
        if (line === "") return line;
        const entry = JSON.parse(line) as { type?: string; message?: { role?: string; model?: string } };
        if (entry.type === "message" && entry.message?.role === "assistant") entry.message.model = model;
        return JSON.stringify(entry);
      });
    const input = join(folder, `s\u001b[31m${osc52}\u009b.jsonl`);
    await writeFile(input, lines.join("\n"));
    const report = join(folder, "r.html");
    const out = await cli([input, "--out", report]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("evil\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\u202emodel");
    expect(out.stdout).toContain("s\\x1b[31m\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b.jsonl");
    expect(out.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    const html = await readFile(report, "utf8");
    expect(html).toContain("evil\\x1b[2J");
    expect(html).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  });
});
