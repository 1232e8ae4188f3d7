// Issue 44, break 2, in the real Pi (RPC mode): stubs keep no secret. The agent reads deploy.env, whose
// output the classifier judges not needed, so the run end removes it; then staging.env, which stays, and
// later both exchanges are omitted as unrelated. The stubs left in their place list the files' facts (a
// URL, a log path) but none of their secrets (passwords in postgres, redis and amqp URLs, a 32-hex
// MASTER_KEY, an AWS secret key alone on a line, a JSON "pass", a YAML encryption_key, a GitHub token):
// no request the main model receives after each removal holds any 8-character piece of one, nor do the
// guard's edits and records in the session file, nor the telemetry file.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, type FakeRequest, lastPrompt, startFakeOpenAI, wireText } from "../kit/fake-openai.ts";
import {
  type AnswerPolicy,
  keywordPolicy,
  type LoopbackClassifier,
  startLoopbackClassifier,
} from "../kit/loopback-classifier.ts";
import { promptSettled, type RpcPi, sessionFileOf, startGuardRpcPi } from "../kit/rpc-pi.ts";

const DEPLOY_SECRETS = [
  "S3cr3tP4ssw0rd",
  "hunter2hunter2",
  "4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f",
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "guest1234guest",
];
const STAGING_SECRETS = [
  "Stag1ngRabbitPw",
  "9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d",
  "ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU6",
];

const filler = (what: string, n: number) =>
  Array.from({ length: n }, (_, i) => `# ${what} flag ${i}: enabled for the checkout flow since release ${i}`);

/** Over minResultChars: judged in chunks, and every chunk is judged not needed. */
const DEPLOY_ENV = [
  "# deploy.env for shop-api (production)",
  "APP_URL=https://shop.example.com",
  `DATABASE_URL=postgres://app:${DEPLOY_SECRETS[0]}@db.internal:5432/prod`,
  `REDIS_URL=redis://:${DEPLOY_SECRETS[1]}@cache.internal:6379/0`,
  `MASTER_KEY=${DEPLOY_SECRETS[2]}`,
  "# the uploads bucket's AWS secret key:",
  DEPLOY_SECRETS[3],
  `RABBIT={"user": "guest", "pass": "${DEPLOY_SECRETS[4]}"}`,
  "LOG_FILE=/var/log/shop/api.log",
  ...filler("production", 70),
].join("\n");

/** Under minResultChars, and small outputs are off: it stays whole until its exchange is omitted. */
const STAGING_ENV = [
  "STAGING_URL=https://staging.shop.example.com",
  `AMQP_URL=amqp://guest:${STAGING_SECRETS[0]}@rabbit.staging:5672/`,
  `encryption_key: ${STAGING_SECRETS[1]}`,
  `GITHUB_TOKEN=${STAGING_SECRETS[2]}`,
  "STAGING_LOG=/var/log/shop/staging.log",
  ...filler("staging", 30),
].join("\n");

const PROMPTS = {
  deploy: "Read deploy.env and tell me what production uses",
  staging: "Now read staging.env",
  other: "Unrelated: is the build green?",
  last: "Thanks, that is all",
};
/** Each prompt's tool calls, in order; then a text answer. */
const CALLS: Record<string, string[]> = {
  [PROMPTS.deploy]: ["cat deploy.env"],
  [PROMPTS.staging]: ["cat staging.env"],
  [PROMPTS.other]: ["echo green"],
};
/** The first exchange's answer is long enough for the exchange to be worth omitting once its output is gone. */
const ANSWERS: Record<string, string> = {
  [PROMPTS.deploy]: [
    "Production uses a postgres database, a redis cache and a RabbitMQ broker; the settings are in deploy.env.",
    ...Array.from({ length: 30 }, (_, i) => `- checkout flag ${i} is enabled in production and needs no change today.`),
  ].join("\n"),
  [PROMPTS.staging]: "Staging mirrors production with its own broker and log file.",
  [PROMPTS.other]: "Yes, the build is green.",
  [PROMPTS.last]: "You are welcome.",
};

/** Old exchanges are unrelated; every chunk of an output is not needed. */
const policy: AnswerPolicy = (body) => {
  const answers = keywordPolicy(/needle/)(body);
  for (const id of Object.keys(body.questions))
    if (id.startsWith("exchange_")) answers[id] = { type: "noul", noul: 0.05 };
  return answers;
};

/** Every piece of the secrets that shows in `text`: a whole secret or any 8 characters of one. */
function leaks(text: string, secrets: string[]): string[] {
  const out: string[] = [];
  for (const s of secrets) for (let i = 0; i + 8 <= s.length; i++) if (text.includes(s.slice(i, i + 8))) out.push(s);
  return [...new Set(out)];
}

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let pi: RpcPi;
let cwd: string;
let telemetryPath: string;
let sessionFile: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy });
  main = await startFakeOpenAI(
    (req) => {
      const { prompt, done } = lastPrompt(req.messages);
      const command = CALLS[prompt]?.[done];
      if (command !== undefined) return { toolCalls: [{ name: "bash", arguments: { command } }] };
      return { text: ANSWERS[prompt] ?? "ok" };
    },
    { strict: true },
  );
  cwd = await mkdtemp(join(tmpdir(), "cg-stub-secrets-"));
  await writeFile(join(cwd, "deploy.env"), DEPLOY_ENV);
  await writeFile(join(cwd, "staging.env"), STAGING_ENV);
  telemetryPath = join(cwd, "telemetry.jsonl");
  pi = await startGuardRpcPi({
    cwd,
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: {
      minRunChars: 0,
      smallResultMinChars: 0,
      midRun: false,
      keepRecentExchanges: 0,
      exchangeBreakEven: false,
      telemetry: true,
      telemetryPath,
    },
  });
  await pi.waitFor((r) => r.method === "setStatus");
  for (const prompt of Object.values(PROMPTS)) await promptSettled(pi, prompt);
  sessionFile = await sessionFileOf(pi);
});
afterAll(async () => {
  await pi?.close();
  await classifier?.close();
  await main?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

/** The requests of a prompt's run, from its first call on, and every request after them. */
function requestsFrom(prompt: string): FakeRequest[] {
  const first = main.log.findIndex((r) => {
    const last = lastPrompt(r.messages);
    return last.prompt === prompt && last.done === 0;
  });
  expect(first).toBeGreaterThanOrEqual(0);
  return main.log.slice(first);
}

const texts = (req: FakeRequest): string[] => req.messages.map((m: unknown) => wireText(m));

describe("a removed .env output and its omitted exchange in the real Pi", () => {
  it("read both files: their secrets were in context while the outputs were", () => {
    expect(leaks(JSON.stringify(main.log.map((r) => r.body)), DEPLOY_SECRETS)).toEqual(DEPLOY_SECRETS);
    const beforeOmission = requestsFrom(PROMPTS.other)[0] as FakeRequest;
    expect(leaks(JSON.stringify(beforeOmission.body), STAGING_SECRETS)).toEqual(STAGING_SECRETS);
  });

  it("leaves a stub with the output's facts and none of its secrets in every later request", () => {
    const later = requestsFrom(PROMPTS.staging);
    const stub = texts(later[0] as FakeRequest).find((t) => t.includes("Removed the output of bash `cat deploy.env`"));
    expect(stub).toBeDefined();
    expect(stub).toContain("https://shop.example.com");
    expect(stub).toContain("/var/log/shop/api.log");
    for (const req of later) expect(leaks(JSON.stringify(req.body), DEPLOY_SECRETS)).toEqual([]);
  });

  it("omits both exchanges, their stubs listing facts and no secret of either file", () => {
    const last = requestsFrom(PROMPTS.last);
    const stubs = texts(last[0] as FakeRequest).filter((t) => t.includes("Omitted an earlier exchange"));
    expect(stubs).toHaveLength(2);
    expect(stubs.find((t) => t.includes('"Now read staging.env"'))).toContain("https://staging.shop.example.com");
    for (const req of last) {
      expect(leaks(JSON.stringify(req.body), [...DEPLOY_SECRETS, ...STAGING_SECRETS])).toEqual([]);
    }
  });

  it("keeps every secret out of the guard's edits and records and out of telemetry", async () => {
    const lines = (await readFile(sessionFile, "utf8")).split("\n").filter((l) => l.trim() !== "");
    const entries = lines.map((l) => JSON.parse(l) as { type: string; customType?: string });
    const guard = entries.filter((e) => e.type === "context_edit" || e.customType === "context-guard");
    const results = guard.flatMap(
      (e) => (e as { data?: { results?: Array<{ kind?: string; outcome: string }> } }).data?.results ?? [],
    );
    expect(results.filter((r) => r.kind === "exchange" && r.outcome === "removed")).toHaveLength(2);
    expect(results.some((r) => (r.kind ?? "large") === "large" && r.outcome === "removed")).toBe(true);
    const all = [...DEPLOY_SECRETS, ...STAGING_SECRETS];
    expect(leaks(JSON.stringify(guard), all)).toEqual([]);
    const telemetry = await readFile(telemetryPath, "utf8");
    expect(telemetry).toContain('"type":"distill"');
    expect(leaks(telemetry, all)).toEqual([]);
  });
});
