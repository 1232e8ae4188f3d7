// Key facts on real outputs: ids from OpenClaw sessions (../shared/sessions), paths from pi-mono's
// session (test/fixtures/sessions), each read from its session file by line.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { factTokens, keyFacts, keyFactsNote } from "../../../../src/core/shared/key-facts.ts";
import { SHARED_SESSIONS, sessionPath } from "../../../kit/labelled-removals.ts";

/** The text blocks of the message on `line` (1-based) of a session file. */
function textAt(session: string, line: number): string {
  const raw = readFileSync(sessionPath(session), "utf8").split("\n")[line - 1] as string;
  const content = (JSON.parse(raw) as { message: { content: unknown } }).message.content;
  if (typeof content === "string") return content;
  return (content as Array<{ type: string; text?: string }>)
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
}

const joined = (facts: string[]) => facts.join(", ").length;

describe.skipIf(SHARED_SESSIONS === undefined)("keyFacts on OpenClaw outputs", () => {
  it("lists a cron job's id first (the agent deleted the job by it turns later)", () => {
    const text = textAt("IWONTHEMONEY-01__clawd-bot__70a7b592.jsonl", 575);
    const facts = keyFacts([text], { maxChars: 300 });
    expect(facts[0]).toBe("636322f1-f10c-4d50-8af4-325bcb8721c0");
    expect(facts).toContain("6632715854");
    expect(facts).toContain("anthony-business-todos.md");
    expect(joined(facts)).toBeLessThanOrEqual(300);
  });

  it("lists a session key and its transcript path verbatim", () => {
    const text = textAt("andrewcarterman-ops__andre-ai-harness__08237d46.jsonl", 7);
    const facts = keyFacts([text], { maxChars: 300 });
    expect(facts).toContain("agent:main:tui-58c5b93f-289c-49cc-b36f-a77dee41578e");
    // The session id is inside the path and the key's neighbour: listed once as itself.
    expect(facts).toContain("08237d46-d6c7-42a2-ab47-87ff3939da71");
    for (const f of facts) expect(text).toContain(f);
  });

  it("lists Notion block ids, most mentioned first, within the bound", () => {
    const text = textAt("atlasiaagente-alt__openclaw-assistant__8ce68dc4.jsonl", 526);
    const facts = keyFacts([text], { maxChars: 120 });
    expect(facts.length).toBeGreaterThan(0);
    for (const f of facts) expect(f).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(joined(facts)).toBeLessThanOrEqual(120);
  });

  it("keeps a fetched page's short id in its URL", () => {
    const text = textAt("Musk-fanX__openclaw-backup__d27ecd5a.jsonl", 59);
    expect(keyFacts([text], { maxChars: 300 })).toContain("https://www.infoq.cn/article/ydyggRjpZUGwEZAAdtTF");
  });
});

describe("keyFacts on pi-mono reads", () => {
  const session = "badlogic__pi-mono__large-session.jsonl";

  it("lists the imported packages and config paths of a source file, not its code names", () => {
    const facts = keyFacts([textAt(session, 28)], { maxChars: 300 });
    expect(facts).toContain("@mariozechner/pi-tui");
    expect(facts).toContain("~/.pi/agent/models.json");
    expect(facts).toContain("../session-manager.js");
    expect(facts.some((f) => /^(?:this|fs|path)\./.test(f))).toBe(false);
  });

  it("lists a schema URL and a colour the agent cited later", () => {
    const facts = keyFacts([textAt(session, 249)], { maxChars: 300 });
    expect(facts[0]).toBe(
      "https://raw.githubusercontent.com/badlogic/pi-mono/main/packages/coding-agent/theme-schema.json",
    );
    expect(facts).toContain("008899");
  });

  it("skips what the stub shows already", () => {
    const text = textAt(session, 28);
    const facts = keyFacts([text], { maxChars: 300, skip: (f) => f.startsWith("@mariozechner/") });
    expect(facts.some((f) => f.startsWith("@mariozechner/"))).toBe(false);
    expect(facts.length).toBeGreaterThan(0);
  });
});

describe("keyFacts never copies a secret", () => {
  const text = [
    '{ "id": "636322f1-f10c-4d50-8af4-325bcb8721c0", "apiKey": "a1b2c3d4e5f6a7b8c9d0e1f2" }',
    "curl -H 'Authorization: Bearer 0123456789abcdef0123' https://api.notion.com/v1/blocks/3290a0b1-97cc",
    "export OPENAI_API_KEY=sk-proj-AbCdEf0123456789xyz",
    "token ghp_AbCdEf0123456789AbCdEf0123456789",
    "https://deploy:hunter2secret@git.example.com/repo.git",
    "https://example.com/callback?code=abc123def456&state=xyz",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "aws AKIAIOSFODNN7EXAMPLE and Q3xZ9kLmN0pR5sT8uV2wY4aB6cD",
    "file src/core/shared/key-facts.ts",
  ].join("\n");

  it("leaves out keys, tokens, credentials in URLs and random key shapes, and keeps the rest", () => {
    const facts = keyFacts([text], { maxChars: 1000 });
    expect(facts).toContain("636322f1-f10c-4d50-8af4-325bcb8721c0");
    expect(facts).toContain("src/core/shared/key-facts.ts");
    expect(facts).toContain("https://example.com/callback");
    for (const secret of [
      "a1b2c3d4e5f6a7b8c9d0e1f2",
      "0123456789abcdef0123",
      "sk-proj",
      "ghp_",
      "hunter2",
      "abc123def456",
      "hooks.slack.com",
      "AKIA",
      "Q3xZ9kLmN0pR5sT8uV2wY4aB6cD",
    ]) {
      for (const f of facts) expect(f).not.toContain(secret);
    }
  });

  it("leaves out a known secret's fragments", () => {
    const facts = keyFacts(["see build-2f9a8c7e1d/out.log and src/a.ts"], {
      maxChars: 300,
      secrets: ["zz-2f9a8c7e1d-zz"],
    });
    expect(facts).toEqual(["src/a.ts"]);
  });
});

describe("keyFactsNote", () => {
  it("is empty when there is nothing to list or no room", () => {
    expect(keyFactsNote(["nothing distinctive here at all"], { maxChars: 300 })).toBe("");
    expect(keyFactsNote(["src/core/a.ts"], { maxChars: 0 })).toBe("");
  });

  it("lists the facts on one line", () => {
    expect(keyFactsNote(["open src/core/a.ts then\nhttps://example.com/x"], { maxChars: 300 })).toBe(
      " It held: https://example.com/x, src/core/a.ts.",
    );
  });

  it("knows every token it could list", () => {
    expect(factTokens(["src/core/a.ts and 636322f1-f10c-4d50-8af4-325bcb8721c0"])).toEqual(
      new Set(["636322f1-f10c-4d50-8af4-325bcb8721c0", "src/core/a.ts"]),
    );
  });
});
