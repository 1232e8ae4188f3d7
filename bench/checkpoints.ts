/**
 * Checkpoint count on one heavy run in the real Pi SDK (issue 19): a faux main model makes one run of N turns,
 * each a `bash` call that `cat`s one of 60 files of 8–45 KB cut from a grep over Pi's packages, then answers;
 * the loopback classifier keeps chunks naming `session-manager` and answers after 200 ms.
 *
 *   node bench/checkpoints.ts --turns 200      # prints checkpoints, edits and wall time as JSON
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { GuardRecord } from "../src/core/shared/types.ts";
import { keywordPolicy, startLoopbackClassifier } from "../test/kit/loopback-classifier.ts";
import { mulberry32 } from "../test/kit/prng.ts";
import { createTestSession, type FauxResponse } from "../test/kit/sdk-session.ts";

const here = import.meta.dirname;
const EXTENSION = resolve(here, "../src/main/index.ts");
const FILES = 60;

const { values } = parseArgs({
  options: { turns: { type: "string", default: "200" }, settings: { type: "string", default: "{}" } },
});
const turns = Number(values.turns);

/** Files of 8–45 KB of whole grep lines (each clipped to 2,000 characters), sizes from a fixed seed. */
function cutFiles(): string[] {
  const grep = execFileSync(
    "grep",
    ["-rn", "-i", "-E", "session|entry|model", resolve(here, "../node_modules/@earendil-works"), "--include=*.js"],
    { maxBuffer: 1 << 30, encoding: "utf8" },
  );
  const lines = grep.split("\n").map((l) => l.slice(0, 2_000));
  const rand = mulberry32(19);
  const files: string[] = [];
  // Spread over the whole output, so some files fall on session-manager's own lines and are kept.
  for (let k = 0; k < FILES; k++) {
    const size = 8_000 + Math.floor(rand() * 37_000);
    let text = "";
    for (let i = Math.floor((k * lines.length) / FILES); i < lines.length; i++) {
      const line = `${lines[i]}\n`;
      if (text.length + line.length > size) break;
      text += line;
    }
    files.push(text);
  }
  return files;
}

const files = cutFiles();
const classifier = await startLoopbackClassifier({ policy: keywordPolicy(/session-manager/), latencyMs: 200 });
const agentDir = await mkdtemp(join(tmpdir(), "cg-bench-cp-"));
const configPath = join(agentDir, "guard.json");
await writeFile(configPath, JSON.stringify({ timeoutMs: 30_000, ...JSON.parse(values.settings) }));
process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
const responses: FauxResponse[] = [];
for (let i = 0; i < turns; i++) {
  responses.push({
    toolCalls: [{ name: "bash", arguments: { command: `cat f${i % files.length}.txt` } as JsonObject }],
  });
}
responses.push("The session model lives in session-manager.js.");
const s = await createTestSession({
  agentDir,
  extensionPaths: [EXTENSION],
  classifierBaseUrl: classifier.baseUrl,
  responses,
});
for (let i = 0; i < files.length; i++) await writeFile(join(s.cwd, `f${i}.txt`), files[i] as string);
const started = performance.now();
await s.session.prompt("Where does the session model live?");
const wallMs = performance.now() - started;
const records = s.session.sessionManager
  .getBranch()
  .filter((e) => e.type === "custom" && e.customType === "context-guard")
  .map((e) => (e as { data: GuardRecord }).data);
const midRun = records.filter((r) => r.phase === "mid-run");
if (process.env.CG_TRACE) {
  let turn = 0;
  const line: string[] = [];
  for (const e of s.session.sessionManager.getBranch()) {
    if (e.type === "message" && e.message.role === "assistant") turn++;
    const data = e.type === "custom" ? (e as { data?: GuardRecord }).data : undefined;
    if (data?.phase === "mid-run") line.push(`${turn}:${data.results.map((r) => r.beforeChars).join("+")}`);
  }
  process.stderr.write(`${line.join(" ")}\n`);
}
const edits = (rs: GuardRecord[]) => rs.flatMap((r) => r.results).filter((x) => x.outcome !== "kept").length;
const withEdit = midRun.filter((r) => r.results.some((x) => x.outcome !== "kept")).length;
process.stdout.write(
  `${JSON.stringify({
    turns,
    checkpoints: midRun.length,
    checkpointsWithEdit: withEdit,
    midRunEdits: edits(midRun),
    runEndEdits: edits(records.filter((r) => r.phase !== "mid-run")),
    judgedMidRun: midRun.reduce((n, r) => n + r.results.length, 0),
    judgedMidRunOnce: new Set(midRun.flatMap((r) => r.results.map((x) => x.entryId))).size,
    requests: classifier.requests.length,
    wallSeconds: Math.round(wallMs / 100) / 10,
  })}\n`,
);
await s.dispose();
await classifier.close();
process.exit(0);
