// Whole items end to end in the real Pi: an unrelated earlier exchange (omitted with the gate off,
// deferred with it on), a stale small read replaced by its stub, an old screenshot removed by age, and
// recall of the omitted exchange.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { InlineExtension } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { makePng, mulberry32 } from "../kit/generate.ts";
import {
  type AnswerPolicy,
  keywordPolicy,
  type LoopbackClassifier,
  startLoopbackClassifier,
  stateObject,
  type WireAnswer,
} from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const png = Buffer.from(makePng(mulberry32(3), 1280, 800, 4000)).toString("base64");

/** Earlier exchanges about the HTTP 500 log are unrelated; superseded small outputs are not needed. */
const policy: AnswerPolicy = (body) => {
  const state = stateObject(body);
  const base = keywordPolicy(/needle/)(body);
  const out: Record<string, WireAnswer> = { ...base };
  const exchanges = (state.exchanges ?? {}) as Record<string, { user?: string }>;
  const items = (state.items ?? {}) as Record<string, { superseded?: string }>;
  for (const id of Object.keys(body.questions)) {
    if (id.startsWith("exchange_"))
      out[id] = { type: "noul", noul: exchanges[id]?.user?.includes("HTTP 500") ? 0.05 : 0.9 };
    if (id.startsWith("item_")) out[id] = { type: "noul", noul: items[id]?.superseded ? 0.05 : 0.9 };
  }
  return out;
};

const screenshotTool: InlineExtension = (pi) => {
  pi.registerTool({
    name: "screenshot",
    label: "Screenshot",
    description: "Take a screenshot of the page",
    parameters: Type.Object({}),
    async execute() {
      return {
        content: [
          { type: "text", text: "Screenshot of the dashboard." },
          { type: "image", data: png, mimeType: "image/png" },
        ],
        details: undefined,
      };
    },
  });
};

const log = Array.from(
  { length: 60 },
  (_, i) =>
    `2026-11-01T10:${String(i % 60).padStart(2, "0")}:00Z GET /api/orders/${i} ${i % 10 === 0 ? 500 : 200} ${20 + i}ms`,
).join("\n");
const badge = Array.from(
  { length: 40 },
  (_, i) => `  // StatusBadge line ${i}: renders the tone for a status value`,
).join("\n");

/** Four prompts on three topics; the faux model's replies for each, in order. */
function script(): FauxResponse[] {
  const call = (name: string, args: JsonObject) => ({ toolCalls: [{ name, arguments: args }] });
  return [
    call("bash", { command: "cat logs/app.log" }),
    "There are 6 HTTP 500 lines in logs/app.log.",
    call("read", { path: "src/StatusBadge.tsx" }),
    call("edit", { path: "src/StatusBadge.tsx", edits: [{ oldText: "line 0:", newText: "line zero:" }] }),
    "I renamed the first comment of StatusBadge.",
    call("screenshot", {}),
    "The dashboard shows three status badges.",
    call("bash", { command: "echo retry" }),
    "The API client retries on 503.",
  ];
}

const PROMPTS = [
  "Count the HTTP 500 lines in logs/app.log",
  "Tidy the first comment in src/StatusBadge.tsx",
  "Take a screenshot of the dashboard",
  "Which API clients retry on 503?",
];

let classifier: LoopbackClassifier;
let agentDir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-items-agent-"));
});
afterAll(async () => classifier.close());

async function runSession(config: Record<string, unknown>): Promise<TestSession> {
  const configPath = join(agentDir, `guard-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(configPath, JSON.stringify(config));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    extensionFactories: [screenshotTool],
    classifierBaseUrl: classifier.baseUrl,
    responses: script(),
  });
  await mkdir(join(s.cwd, "logs"));
  await mkdir(join(s.cwd, "src"));
  await writeFile(join(s.cwd, "logs/app.log"), log);
  await writeFile(join(s.cwd, "src/StatusBadge.tsx"), badge);
  for (const prompt of PROMPTS) await s.session.prompt(prompt);
  return s;
}

function records(s: TestSession): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

function visible(s: TestSession, id: string): string {
  const entry = s.session.sessionManager.buildSessionProjection().entries.find((e) => e.sourceEntry.id === id);
  return JSON.stringify(entry?.messages ?? null);
}

describe("whole items with the exchange gate off", () => {
  let s: TestSession;
  beforeAll(async () => {
    s = await runSession({ exchangeBreakEven: false, keepReads: false });
  });
  afterAll(async () => s?.dispose());

  it("replaces the stale small read with its stub and keeps the fresh outputs", () => {
    const small = records(s).flatMap((r) => r.results.filter((x) => x.kind === "small"));
    const read = small.find((x) => x.label.startsWith("read"));
    expect(read).toMatchObject({ outcome: "removed", reason: "not-needed" });
    const shown = visible(s, read?.entryId as string);
    expect(shown).toContain("[context-guard] Omitted the output of read src/StatusBadge.tsx");
    expect(shown).toContain(`recall({\\"entryId\\":\\"${read?.entryId}\\"})`);
    expect(small.find((x) => x.label.includes("cat logs/app.log"))).toMatchObject({
      outcome: "kept",
      reason: "needed",
    });
  });

  it("removes the screenshot once enough turns followed, keeping the text", () => {
    const image = records(s).flatMap((r) => r.results.filter((x) => x.kind === "image"))[0];
    expect(image).toMatchObject({ outcome: "removed", reason: "3 turns old" });
    const shown = visible(s, image?.entryId as string);
    expect(shown).toContain("[context-guard] Removed 1 image from this output (1280×800");
    expect(shown).toContain("Screenshot of the dashboard.");
    expect(shown).not.toContain('"type":"image"');
  });

  it("omits the unrelated first exchange as a whole, never orphaning a tool call", () => {
    const result = records(s).flatMap((r) => r.results.filter((x) => x.kind === "exchange"))[0];
    expect(result).toMatchObject({ outcome: "removed", reason: "unrelated" });
    const branch = s.session.sessionManager.getBranch();
    const promptIndex = branch.findIndex((e) => e.id === result?.entryId);
    const nextPrompt = branch.findIndex((e, i) => i > promptIndex && e.type === "message" && e.message.role === "user");
    const inside = branch.slice(promptIndex + 1, nextPrompt).filter((e) => e.type === "message");
    expect(result?.omitted?.sort()).toEqual(inside.map((e) => e.id).sort());
    expect(visible(s, result?.entryId as string)).toContain(
      "Omitted an earlier exchange judged unrelated to the current work",
    );
    const messages = s.session.sessionManager.buildSessionProjection().messages as Array<{
      role: string;
      content?: Array<{ type: string; id?: string }>;
      toolCallId?: string;
    }>;
    const calls = new Set(
      messages.flatMap((m) =>
        m.role === "assistant" ? (m.content ?? []).filter((b) => b.type === "toolCall").map((b) => b.id) : [],
      ),
    );
    const results = new Set(messages.filter((m) => m.role === "toolResult").map((m) => m.toolCallId));
    expect([...calls].sort()).toEqual([...results].sort());
  });

  it("recall of the omitted exchange returns its transcript", async () => {
    const result = records(s).flatMap((r) => r.results.filter((x) => x.kind === "exchange"))[0];
    s.addResponses({ toolCalls: [{ name: "recall", arguments: { entryId: result?.entryId as string } }] }, "ok");
    await s.session.prompt("Back to the log: how many 500s?");
    // What recall returned, as the session file holds it (a whole recall then brings the exchange back, so
    // the next request shows the exchange in place and the recall as a note).
    const branch = s.session.sessionManager.getBranch() as unknown as Array<{
      type: string;
      message?: { role: string; toolName?: string; content?: Array<{ text?: string }> };
    }>;
    const recalled = branch.filter((e) => e.message?.role === "toolResult" && e.message.toolName === "recall");
    const text = recalled.at(-1)?.message?.content?.[0]?.text ?? "";
    expect(text).toMatch(/^## user\nCount the HTTP 500 lines in logs\/app\.log/);
    expect(text).toContain('## assistant\n[tool call] bash {"command":"cat logs/app.log"}');
    expect(text).toContain("## tool result (bash)\n2026-11-01T10:00:00Z GET /api/orders/0 500 20ms");
    expect(text).toContain("There are 6 HTTP 500 lines in logs/app.log.");
  });
});

describe("whole items with the exchange gate on", () => {
  it("defers the unrelated exchange: too small to pay for the cache rewrite", async () => {
    const s = await runSession({});
    try {
      const result = records(s).flatMap((r) => r.results.filter((x) => x.kind === "exchange"))[0];
      expect(result).toMatchObject({ outcome: "kept", reason: "deferred" });
      expect(visible(s, result?.entryId as string)).not.toContain("[context-guard]");
    } finally {
      await s.dispose();
    }
  });
});
