// `context-guard replay` as a user runs it: the sample session offline, a broken file, a hosted model
// without its key. The render check in headless Chromium is `npm run report:screenshot` (run by CI).
import { execFile, execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import type { ReplayReport } from "../../src/core/replay/replay-metrics.ts";
import { keywordPolicy, startLoopbackClassifier } from "../kit/loopback-classifier.ts";

const run = promisify(execFile);
const REPO_ROOT = join(import.meta.dirname, "../..");
const SAMPLE = join(REPO_ROOT, "bench", "sample", "session.jsonl");

let dir: string;
let agentDir: string;
/** The environment of a user with no key and an empty agent folder. */
let env: NodeJS.ProcessEnv;

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(REPO_ROOT, "src", "cli.ts"), ...args], {
      cwd: dir,
      env,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-replay-cli-"));
  agentDir = join(dir, "agent");
  env = { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" };
  for (const key of Object.keys(env)) if (/_API_KEY$/.test(key)) delete env[key];
  delete env.PI_CONTEXT_GUARD_CONFIG;
});

describe("context-guard replay", () => {
  let report: ReplayReport;
  let html: string;

  it("replays the sample session with no key and no network, prints the summary and writes the report", async () => {
    const out = await cli(["replay", SAMPLE, "--json", "metrics.json"]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    // No key for the configured Jev: the embedded classifier is used, and the summary says so.
    expect(out.stdout).toContain("classifier local/lexical");
    expect(out.stdout).toContain("no openrouter key");
    // Money first: dollars off → on with the classifier's cost, calibrated on the sample's recorded usage.
    expect(out.stdout).toMatch(
      /\n {2}dollars\s+\$[\d.]+ → \$[\d.]+ main model \(guard off → on\) \+ classifier \$[\d.]+/,
    );
    expect(out.stdout).toMatch(/calibration\s+guard off vs recorded: .* \$[\d.]+ vs \$5\.00 \(\+\d\.\d%\)/);
    expect(out.stdout).toMatch(/billed context\s+[\d.]+[kM]? → [\d.]+[kM]? tokens over all requests\s+\(−\d/);
    expect(out.stdout).toMatch(
      /needed later\?\s+likely needed: \d+ of \d+ removed items \([\d.]+%\) · re-ran \d+ · seen again \d+/,
    );
    expect(out.stdout).toContain(`report: ${join(dir, "context-guard-report.html")}`);
    // Counts in words, and no figure that was not measured: the embedded scorer has no latency, and its
    // cost is the dollars line's (Jev's price), not a "$0" beside it.
    expect(out.stdout).not.toMatch(/\b1 (checkpoints|requests|entries|passes)\b/);
    expect(out.stdout).toMatch(/\n {2}classifier {8}\d+ requests( · latency p50 [\d.]+ m?s, max [\d.]+ m?s)?\n/);
    expect(out.stdout).not.toMatch(/latency p50 0 ms/);
    // The latency the hand-over was modelled with is said and recorded.
    expect(out.stdout).toContain("1200 ms per wave of classifier calls (--wave-ms)");
    report = JSON.parse(await readFile(join(dir, "metrics.json"), "utf8")) as ReplayReport;
    expect(report.waveMs).toBe(1200);
    const [s] = report.sessions;
    expect(s?.entries).toBe(260);
    expect(s?.problems).toEqual([]);
    expect(s?.totals.requests).toBe(105);
    expect(s?.totals.runEnds).toBe(6);
    expect(s?.totals.invalidDrafts).toBe(0);
    expect(s?.totals.billedOn).toBeLessThan(s?.totals.billedOff ?? 0);
    // The sample's one old exchange does not pay for its rewrite under the tuned break-even defaults.
    for (const kind of ["large", "small", "image"]) expect(s?.totals.edits[kind] ?? 0).toBeGreaterThan(0);
    expect(s?.passes.some((p) => p.phase === "mid-run" && p.drafts > 0)).toBe(true);
    html = await readFile(join(dir, "context-guard-report.html"), "utf8");
    expect(html).toContain("<svg");
    // Self-contained: no scripts, stylesheets, images or fonts from anywhere.
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import/);
    expect(html).toContain('<path class="off"');
    expect(html).toContain('<path class="on"');
    // What each class of item earned, beside its likely-needed removals.
    expect(html).toMatch(/<table class="classes">.*<td>(large|small) outputs<\/td><td>\d+<\/td><td>\d+%<\/td>/s);
  });

  it("names a malformed and a truncated line, and replays the rest", async () => {
    const lines = (await readFile(SAMPLE, "utf8")).split("\n").filter((l) => l !== "");
    lines[40] = lines[40]?.slice(0, 50) ?? "";
    const broken = join(dir, "broken.jsonl");
    await writeFile(broken, `${lines.join("\n")}\n{"type":"message","id":"ffff0000","parentId":`);
    const out = await cli(["replay", broken, "--out", "broken.html", "--json", "broken.json"]);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("problem: line 41 is not valid JSON");
    expect(out.stdout).toContain(`problem: line ${lines.length + 1} is truncated`);
    // As in Pi, the branch ends at the last entry and starts after the broken parent link (line 42).
    expect(out.stdout).toMatch(
      /problem: line 42: its parent entry "\w+" is missing .*Pi resumes the branch from here, so 39 entries/,
    );
    const metrics = JSON.parse(await readFile(join(dir, "broken.json"), "utf8")) as ReplayReport;
    expect(metrics.sessions[0]?.totals.runEnds).toBe(5);
    expect(metrics.sessions[0]?.totals.requests).toBe(90);
    expect(await readFile(join(dir, "broken.html"), "utf8")).toContain("line 41 is not valid JSON");
  });

  it("a file with nothing to replay fails and says why", async () => {
    const header = JSON.stringify({
      type: "session",
      version: 3,
      id: "x",
      timestamp: "2026-01-01T00:00:00Z",
      cwd: "/",
    });
    const entry = JSON.stringify({
      type: "message",
      timestamp: "2026-01-01T00:00:01Z",
      message: { role: "user", content: "q" },
    });
    const bad = join(dir, "no-ids.jsonl");
    await writeFile(bad, `${header}\n${entry}\n`);
    const out = await cli(["replay", bad, "--out", "no-ids.html"]);
    expect(out.code).toBe(1);
    expect(out.stdout).toContain("not replayed:");
    expect(out.stdout).toContain("nothing to replay");
  });

  it("an empty file: named once, with why", async () => {
    const empty = join(dir, "empty.jsonl");
    await writeFile(empty, "");
    const out = await cli(["replay", empty, "--out", "empty.html"]);
    expect(out.stdout).toContain(`not replayed: ${empty}: the file is empty`);
    expect(out.stdout).not.toContain(`${empty}: ${empty}`);
  });

  it("a line that is not JSON is named by its line, not the parser's", async () => {
    // The sample's first 60 lines: the line's name needs no more of the session.
    const lines = (await readFile(SAMPLE, "utf8"))
      .split("\n")
      .filter((l) => l !== "")
      .slice(0, 60);
    lines[50] = "{oops}";
    const file = join(dir, "line51.jsonl");
    await writeFile(file, `${lines.join("\n")}\n`);
    const out = await cli(["replay", file, "--out", "line51.html"]);
    expect(out.stdout).toContain(
      "problem: line 51 is not valid JSON (Expected property name or '}' in JSON at column 2)",
    );
    expect(out.stdout).not.toMatch(/line 1 column/);
  });

  it("--version, and --write --cwd records another working directory and the extension its stubs need", async () => {
    expect((await cli(["--version"])).stdout).toMatch(/^context-guard \d+\.\d+\.\d+\n$/);
    expect((await cli(["replay", "--version"])).stdout).toMatch(/^context-guard \d+\.\d+\.\d+\n$/);
    const out = join(dir, "moved.jsonl");
    const run = await cli(["replay", SAMPLE, "--out", "moved.html", "--write", out, "--cwd", dir]);
    expect(run.code).toBe(0);
    const header = JSON.parse((await readFile(out, "utf8")).split("\n")[0] as string);
    expect(header.cwd).toBe(dir);
    expect(header.contextGuard).toMatch(/needs the pi-context-guard extension/);
    const alone = await cli(["replay", SAMPLE, "--cwd", dir]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--cwd goes with --write");
  });

  it("refuses a hosted model without its key, and says how to run offline", async () => {
    const out = await cli(["replay", SAMPLE, "--model", "openrouter/~typesafe/jev-latest"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("no openrouter key");
    expect(out.stderr).toContain("--model local/lexical");
  });

  it("explains a bad path and unknown options", async () => {
    expect((await cli(["replay", join(dir, "missing.jsonl")])).stderr).toContain("no such file or folder");
    const bad = await cli(["replay", SAMPLE, "--nope"]);
    expect(bad.code).toBe(2);
    const wave = await cli(["replay", SAMPLE, "--wave-ms", "1.5s"]);
    expect(wave.code).toBe(2);
    expect(wave.stderr).toContain("--wave-ms 1.5s: not an integer from 0 to 600000");
    expect((await cli(["replay", "--help"])).stdout).toContain("Usage: context-guard replay");
  });

  it("--tools and --config given a FIFO or a device fail at once, naming the path and what it is", async () => {
    const fifo = join(dir, "named.fifo");
    execFileSync("mkfifo", [fifo]);
    // Before: --tools on a FIFO waited for a writer forever; --config on one replayed with the defaults.
    const cases: Array<[option: string, path: string, kind: string]> = [
      ["--tools", fifo, "a FIFO (named pipe)"],
      ["--tools", "/dev/zero", "a character device"],
      ["--config", fifo, "a FIFO (named pipe)"],
      ["--config", dir, "a directory"],
    ];
    for (const [option, path, kind] of cases) {
      const out = await cli(["replay", SAMPLE, option, path, "--out", join(dir, "kind.html")]);
      expect(out.code).not.toBe(0);
      expect(out.stderr).toContain(option);
      expect(out.stderr).toContain(path);
      expect(out.stderr).toContain(`it is ${kind}, not a regular file`);
      expect(out.stdout).toBe("");
    }
  });

  it("uses a hosted classifier through Pi's client with its key, and a re-run is answered from the cache", async () => {
    const lb = await startLoopbackClassifier({ policy: keywordPolicy(/computeTotals|AuthUrl/) });
    try {
      const hosted = join(dir, "hosted-agent");
      await mkdir(hosted, { recursive: true });
      // A models.json override keeps the built-in catalog and points OpenRouter at the loopback server.
      await writeFile(
        join(hosted, "models.json"),
        JSON.stringify({ providers: { openrouter: { baseUrl: lb.baseUrl, apiKey: "test-key" } } }),
      );
      const args = ["replay", SAMPLE, "--agent-dir", hosted, "--out", "hosted.html", "--json", "hosted.json"];
      const first = await cli(args);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain("classifier openrouter/~typesafe/jev-latest");
      const asked = lb.requests.length;
      expect(asked).toBeGreaterThan(10);
      const metrics = JSON.parse(await readFile(join(dir, "hosted.json"), "utf8")) as ReplayReport;
      // A deferred output is asked again at a later pass with the same request: answered from the cache.
      const judged = metrics.sessions[0]?.totals.classifierRequests ?? 0;
      expect(judged).toBe(asked + (metrics.sessions[0]?.totals.cacheHits ?? 0));
      expect(metrics.sessions[0]?.totals.costUsd).toBeGreaterThan(0);
      const again = await cli(args);
      expect(again.code).toBe(0);
      expect(lb.requests.length).toBe(asked);
      const cached = JSON.parse(await readFile(join(dir, "hosted.json"), "utf8")) as ReplayReport;
      expect(cached.sessions[0]?.totals.cacheHits).toBe(judged);
      expect(cached.sessions[0]?.totals.costUsd).toBe(0);
      expect(cached.sessions[0]?.totals.billedOn).toBe(metrics.sessions[0]?.totals.billedOn);
      expect(again.stdout).toContain(`(${judged} from cache)`);
    } finally {
      await lb.close();
    }
  });
});
