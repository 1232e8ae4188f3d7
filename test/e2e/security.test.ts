// Security in the real Pi (the sandbox, redaction and file-mode checks without Pi are in
// test/unit/security.test.ts): nothing the extension writes (records, telemetry, notices, settings) contains
// the API key, even when a server echoes it back; and the README's privacy section lists exactly what the
// captured classifier requests contain.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { InlineExtension } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { faultSession, grepText, logText } from "../kit/fault-session.ts";
import { makePng, mulberry32 } from "../kit/generate.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { keywordPolicy, type SystemOneRequestBody } from "../kit/loopback-classifier.ts";
import { writeSkills } from "../kit/routing-fixtures.ts";
import type { FauxResponse } from "../kit/sdk-session.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-sec-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const call = (name: string, args: JsonObject): FauxResponse => ({ toolCalls: [{ name, arguments: args }] });

// ------------------------------------------------------------------------------------------------------------
// The API key

/** Not in a well-known key format: only knowing the actual key can cut it out of an echo. */
const SECRET = "cgkey-SECRETdeadbeef0123456789abcdef";

describe("the API key", () => {
  it("never appears in records, telemetry, notices or settings, even when the server echoes it", async () => {
    // A server that puts the request's headers (the key among them) into its error body.
    const echo = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(500, { "content-type": "text/plain" });
        const key = String(req.headers.authorization).replace(/^Bearer /, "");
        res.end(`key ${key} rejected; request headers were ${JSON.stringify(req.headers)}`);
      });
    });
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    const port = (echo.address() as { port: number }).port;
    const telemetryPath = join(dir, "telemetry.jsonl");
    const s = await faultSession({
      config: { telemetry: true, telemetryPath, midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses: [call("bash", { command: "cat a.txt" }), "first", call("bash", { command: "cat b.txt" }), "second"],
      files: { "a.txt": grepText(24, "a"), "b.txt": grepText(24, "b") },
    });
    const { ui, notices, statuses } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "tui");
    try {
      // A pass against the well-behaved loopback, then one against the echoing server.
      s.modelRuntime.registerProvider("openrouter", { baseUrl: s.classifier.baseUrl, apiKey: SECRET });
      await s.session.prompt("look at a");
      expect(s.classifier.requestHeaders.at(-1)?.authorization).toBe(`Bearer ${SECRET}`);
      s.modelRuntime.registerProvider("openrouter", { baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: SECRET });
      await s.session.prompt("look at b");
      await s.session.prompt("/guard");
      await s.session.prompt("/guard off");
      await s.session.prompt("/guard stats");
      await s.session.extensionRunner.emit({ type: "session_shutdown", reason: "quit" } as never);

      const records = s.records();
      expect(records).toHaveLength(2);
      expect(records[1]?.results[0]?.reason).toBe("error");
      const written = [
        JSON.stringify(s.session.sessionManager.getEntries()),
        await readFile(telemetryPath, "utf8"),
        JSON.stringify(notices),
        JSON.stringify(statuses),
        await readFile(process.env.PI_CONTEXT_GUARD_CONFIG as string, "utf8"),
      ];
      for (const text of written) {
        expect(text).not.toContain(SECRET);
        // Not even a recognizable part of it.
        expect(text).not.toContain(SECRET.slice(0, 16));
        expect(text).not.toContain(SECRET.slice(-16));
      }
    } finally {
      await s.dispose();
      await s.classifier.close();
      await new Promise((r) => echo.close(r));
    }
  });
});

// ------------------------------------------------------------------------------------------------------------
// The privacy section of the README, against the requests captured in a session that exercises every kind
// of request: run end (large and small outputs, old exchanges, history with a compaction summary), a
// mid-run checkpoint, skill routing and namespace surfacing.

/** Every state field a request may carry: the README phrase that documents it, and its documented limit. */
const DOCUMENTED: Record<string, { phrase: string; max?: number }> = {
  user_question: {
    phrase: "your question for the run, and messages you sent during it (up to 4,000 characters)",
    max: 4000,
  },
  final_answer: { phrase: "the final answer (up to 6,000 characters)", max: 6000 },
  agent_notes_during_the_run: { phrase: "the agent's earlier notes in the run (up to 2,000)", max: 2000 },
  "earlier_conversation.summary": {
    phrase: "the latest compaction or branch summary (up to 2,000 characters)",
    max: 2000,
  },
  "earlier_conversation.first_request": { phrase: "the first prompt of the session (up to 1,000)", max: 1000 },
  "earlier_conversation.recent_exchanges[].user": { phrase: "each a prompt (up to 800)", max: 800 },
  "earlier_conversation.recent_exchanges[].assistant": { phrase: "the last reply after it (up to 1,200)", max: 1200 },
  tool: { phrase: "the tool's name and arguments (up to 600 characters)" },
  tool_arguments: { phrase: "the tool's name and arguments (up to 600 characters)", max: 600 },
  "chunks.*": { phrase: "the text of the large output being judged, in chunks of up to 32,000 characters per request" },
  "items.*.tool": { phrase: "the tool's name and arguments (up to 600 characters)" },
  "items.*.label": { phrase: "the tool's name and arguments (up to 600 characters)" },
  "items.*.output": { phrase: "small outputs (from 400 characters, up to 4,000 each)", max: 4000 },
  "exchanges.*.user": { phrase: "each prompt (up to 600 characters)", max: 600 },
  "exchanges.*.assistant": { phrase: "the last reply (up to 800)", max: 800 },
  "exchanges.*.tool_calls[]": { phrase: "the tool calls as short labels (tool and command or path, at most 20)" },
  "agent_progress.latest_note": { phrase: "the agent's latest notes (up to 2,000 characters)", max: 2000 },
  "agent_progress.earlier_notes": { phrase: "earlier notes (up to 2,000)", max: 2000 },
  "later_tool_calls[]": { phrase: "the labels of the calls made since the output" },
  superseded: { phrase: "which later call made an output out of date" },
  "items.*.superseded": { phrase: "which later call made an output out of date" },
  // Written by the extension itself, no user data: fixed instructions, sizes, failure flags.
  situation: { phrase: "fixed instructions" },
  output_size: { phrase: "sizes" },
  "exchanges.*.size": { phrase: "sizes" },
  tool_status: { phrase: "whether a call failed" },
  "items.*.status": { phrase: "whether a call failed" },
  // Skill routing and tool surfacing.
  latest_request: { phrase: "your prompt, verbatim (up to 12,000 characters", max: 12_000 },
  "earlier_conversation_newest_first[].role": { phrase: "a digest of the earlier conversation" },
  "earlier_conversation_newest_first[].text": {
    phrase: "up to 24,000 characters in total and 3,000 per message",
    max: 3000,
  },
  "skill.name": { phrase: "the skill's name, description and `SKILL.md` body (up to 24,000 characters)" },
  "skill.description": { phrase: "the skill's name, description and `SKILL.md` body (up to 24,000 characters)" },
  "skill.instructions": {
    phrase: "the skill's name, description and `SKILL.md` body (up to 24,000 characters)",
    max: 24_000,
  },
  "tool_groups.*.description": { phrase: "each namespace's name, description and the names of its tools (at most 30)" },
  "tool_groups.*.tools[]": { phrase: "each namespace's name, description and the names of its tools (at most 30)" },
};

/** Every leaf of a request state as a normalized path (`chunks.*`, `items.*.output`, `x[].y`) with its value. */
function leaves(value: unknown, path = "", out: Array<[string, unknown]> = []): Array<[string, unknown]> {
  const dynamic = /^(chunk|item|exchange)_\d+$/;
  if (Array.isArray(value)) {
    for (const v of value) leaves(v, `${path}[]`, out);
    return out;
  }
  if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      const key = dynamic.test(k) || path === "tool_groups" ? "*" : k;
      leaves(v, path ? `${path}.${key}` : key, out);
    }
    return out;
  }
  out.push([path, value]);
  return out;
}

const squash = (text: string) => text.replace(/\s+/g, " ");

describe("the README's privacy section", () => {
  it("lists exactly what the captured requests contain, within the documented limits", async () => {
    const agentDir = await mkdtemp(join(tmpdir(), "cg-privacy-skills-"));
    await writeSkills(agentDir);
    const rng = mulberry32(5);
    const png = Buffer.from(makePng(rng, 800, 600, 3000)).toString("base64");
    const TINY = "TINY-OUTPUT-MARKER-never-sent";
    const EDITED = "EDIT-MARKER-never-sent";
    const tools: InlineExtension = (pi) => {
      pi.registerTool({
        name: "screenshot",
        label: "Screenshot",
        description: "Take a screenshot",
        parameters: Type.Object({}),
        async execute() {
          return {
            content: [
              { type: "text", text: "Screenshot." },
              { type: "image", data: png, mimeType: "image/png" },
            ],
            details: undefined,
          };
        },
      });
      pi.registerTool({
        name: "browser_open",
        label: "browser_open",
        description: "Open a page in the headless browser",
        parameters: Type.Object({ url: Type.String() }),
        async execute() {
          return { content: [{ type: "text", text: "ok" }], details: undefined };
        },
      });
    };
    const parser = Array.from({ length: 40 }, (_, i) => `export const rule${i} = "${EDITED.slice(0, 4)}${i}";`).join(
      "\n",
    );
    const s = await faultSession({
      config: {
        keepReads: false,
        keepRecentExchanges: 0,
        exchangeBreakEven: false,
        historyExchanges: 1,
        midRunBatchChars: 5000,
        midRunMinAgeTurns: 1,
        midRunBreakEven: false,
        imageKeepTurns: 1,
        toolNamespaces: { browser: { prefix: "browser_", description: "Headless web browser" } },
      },
      policy: keywordPolicy(/rule1|big1/),
      responses: [
        // A: the first prompt, with a screenshot and a tiny output (never sent).
        call("screenshot", {}),
        call("bash", { command: "cat tiny.txt" }),
        `Set up done. ${"The layout looks fine. ".repeat(20)}`,
        // B: a small read later edited (superseded), the edit (excluded), large outputs (checkpoints), one
        // failing, one run again (superseded at the checkpoint), and a failing small one.
        { text: "Reading the parser first.", toolCalls: [{ name: "read", arguments: { path: "src/p.ts" } }] },
        call("edit", { path: "src/p.ts", edits: [{ oldText: "rule0 ", newText: `rule0 /* ${EDITED} */ ` }] }),
        { text: "Now the logs.", toolCalls: [{ name: "bash", arguments: { command: "cat big1.txt" } }] },
        call("bash", { command: "cat big1.txt" }),
        call("bash", { command: "cat big2.txt; exit 3" }),
        call("bash", { command: "cat small.txt; exit 1" }),
        `Fixed the parser; see rule1. ${"Details follow. ".repeat(30)}`,
        // C: a third prompt, so the first one is only in the history as the session's first request.
        call("bash", { command: "cat big3.txt" }),
        "The lexer is fine.",
        // The compaction: a history summary and (the cut falls inside a run) a turn-prefix summary.
        "Summary: the parser was fixed and the setup is done.",
        "Summary of the turn so far: the parser fix.",
        // D: after the compaction.
        call("bash", { command: "cat big4.txt" }),
        "The tokens are fine.",
        // E: with the guard off nothing is sent.
        call("bash", { command: "cat big4.txt" }),
        "Still fine.",
      ],
      files: {
        "tiny.txt": TINY,
        "big1.txt": logText(12, "big1"),
        "small.txt": logText(1.5, "small"),
        "big2.txt": logText(12, "big2"),
        "big3.txt": grepText(16, "l"),
        "big4.txt": grepText(16, "t"),
      },
      extensionFactories: [tools],
      skillPaths: [join(agentDir, "skills")],
      // Manual compaction only, keeping little, so the last run sees a compaction summary.
      settings: { compaction: { enabled: false, keepRecentTokens: 200 }, retry: { enabled: false } },
    });
    await mkdir(join(s.cwd, "src"), { recursive: true }).catch(() => undefined);
    await writeFile(join(s.cwd, "src/p.ts"), parser);
    try {
      s.modelRuntime.registerProvider("openrouter", { baseUrl: s.classifier.baseUrl, apiKey: SECRET });
      await s.session.prompt(`Set up the project and take a screenshot. ${"Setup detail. ".repeat(200)}`);
      await s.session.prompt("Fix the parser in src/p.ts, then check the logs; the pdf report can wait.");
      await s.session.prompt("Now check the lexer output.");
      await s.session.compact();
      await s.session.prompt("Now check the tokens.");
      const sent = s.classifier.requests.length;
      await s.session.prompt("/guard off");
      await s.session.prompt("Check the tokens once more.");
      expect(s.classifier.requests.length).toBe(sent);

      const readme = squash(await readFile(resolve(import.meta.dirname, "../../README.md"), "utf8"));
      const privacy = readme.slice(readme.indexOf("## Privacy"), readme.indexOf("## Use as a library"));
      const seen = new Set<string>();
      for (const body of s.classifier.requests as SystemOneRequestBody[]) {
        // Never sent: images, the API key, outputs below smallResultMinChars, results of excluded tools.
        const text = JSON.stringify(body);
        expect(Array.isArray(body.state)).toBe(false);
        expect(text).not.toContain(png.slice(0, 64));
        expect(text).not.toMatch(/data:image|image_url/);
        expect(text).not.toContain(SECRET);
        expect(text).not.toContain(TINY);
        expect(text).not.toContain(EDITED);
        let chunkChars = 0;
        for (const [path, value] of leaves(body.state)) {
          const doc = DOCUMENTED[path];
          expect(doc, `undocumented field ${path}`).toBeDefined();
          seen.add(path);
          if (doc?.max !== undefined && typeof value === "string")
            expect(value.length, path).toBeLessThanOrEqual(doc.max);
          if (path === "chunks.*" && typeof value === "string") chunkChars += value.length;
        }
        expect(chunkChars).toBeLessThanOrEqual(32_000);
        const state = body.state as {
          exchanges?: Record<string, { tool_calls?: unknown[] }>;
          tool_groups?: Record<string, { tools: unknown[] }>;
        };
        for (const ex of Object.values(state.exchanges ?? {}))
          expect((ex.tool_calls ?? []).length).toBeLessThanOrEqual(20);
        for (const g of Object.values(state.tool_groups ?? {})) expect(g.tools.length).toBeLessThanOrEqual(31);
      }
      // Everything documented is in the README, and everything the README lists was actually sent.
      for (const [path, doc] of Object.entries(DOCUMENTED)) {
        expect(privacy, `README privacy section lacks "${doc.phrase}" (${path})`).toContain(doc.phrase);
      }
      const unseen = Object.keys(DOCUMENTED).filter((p) => !seen.has(p));
      expect(unseen).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
