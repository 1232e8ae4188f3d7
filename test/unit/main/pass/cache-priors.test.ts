// The prior of every API Pi 1.6 speaks, checked against the request Pi's own provider code builds for it:
// pi-ai's stream() runs up to its onPayload hook (no network), and the cache markers in that payload
// (`cache_control`, Bedrock's `cachePoint`, `prompt_cache_key`/`promptCacheKey`) must match what
// cache-behaviour assumes for a session that has no usage yet.
import type { Api, Model } from "@earendil-works/pi-ai";
import { getModels, stream } from "@earendil-works/pi-ai/compat";
import { describe, expect, it } from "vitest";
import { priorFor } from "../../../../src/core/cache/cache-behaviour.ts";
import { cacheFamily } from "../../../../src/main/pass/pass-pipeline.ts";

const context = {
  systemPrompt: "You are a coding agent.",
  messages: [{ role: "user" as const, content: "list the files", timestamp: 0 }],
  tools: [],
};
const CODEX_CLAIM = "https://api.openai.com/auth";
const codexKey = `h.${Buffer.from(JSON.stringify({ [CODEX_CLAIM]: { chatgpt_account_id: "acct" } })).toString("base64")}.s`;

/** The request body Pi would send for `model`, captured at onPayload (the request is then abandoned). */
async function payloadOf(model: Model<Api>, options: Record<string, unknown> = {}): Promise<string> {
  let captured: unknown;
  const s = stream(model, context, {
    apiKey: "key",
    sessionId: "session-1",
    ...options,
    onPayload: (p: unknown) => {
      captured = p;
      throw new Error("captured");
    },
  } as Parameters<typeof stream>[2]);
  await s.result().catch(() => undefined);
  expect(captured, `${model.provider}/${model.id}: no payload`).toBeDefined();
  return JSON.stringify(captured);
}

function pick(provider: string, test: (m: Model<Api>) => boolean): Model<Api> {
  const found = (getModels(provider as never) as Model<Api>[]).find(test);
  if (!found) throw new Error(`Pi's registry has no such ${provider} model`);
  return found;
}

const explicitMarks = (p: string) => p.includes('"cache_control"') || p.includes('"cachePoint"');
const keyMarks = (p: string) => p.includes('"prompt_cache_key"') || p.includes('"promptCacheKey"');

describe("priors against the payload Pi builds", () => {
  const cases: Array<[string, () => Model<Api>, string, Record<string, unknown>?]> = [
    ["anthropic-messages", () => pick("anthropic", (m) => m.id.includes("sonnet")), "explicit"],
    [
      "bedrock-converse-stream, Claude (cachePoint)",
      () => pick("amazon-bedrock", (m) => /claude-(sonnet|haiku|opus)-4/.test(m.id)),
      "explicit",
    ],
    [
      "bedrock-converse-stream, Nova (no cachePoint)",
      () => pick("amazon-bedrock", (m) => m.id.includes("nova")),
      "automatic",
    ],
    [
      "bedrock-converse-stream, Mistral (no cachePoint)",
      () => pick("amazon-bedrock", (m) => m.id.includes("mistral")),
      "none",
    ],
    ["google-generative-ai", () => pick("google", (m) => m.id.includes("gemini")), "automatic"],
    ["google-vertex", () => pick("google-vertex", (m) => m.id.includes("gemini")), "automatic"],
    [
      "openai-completions without cache_control",
      () => pick("openrouter", (m) => m.api === "openai-completions" && !m.id.startsWith("anthropic/")),
      "automatic",
    ],
    [
      "openai-completions with cache_control (OpenRouter's anthropic/*)",
      () => ({
        ...pick("openrouter", (m) => m.api === "openai-completions"),
        id: "anthropic/claude-sonnet-4.5",
      }),
      "explicit",
    ],
    ["openai-responses", () => pick("openai", (m) => m.api === "openai-responses"), "automatic"],
    [
      "azure-openai-responses",
      () => pick("azure", () => true),
      "automatic",
      { azureBaseUrl: "https://example.openai.azure.com" },
    ],
    ["openai-codex-responses", () => pick("openai-codex", () => true), "codex", { apiKey: codexKey }],
    ["mistral-conversations", () => pick("mistral", () => true), "automatic"],
  ];

  for (const [name, model, behaviour, options] of cases) {
    it(name, async () => {
      const m = model();
      const payload = await payloadOf(m, options);
      const prior = priorFor(m);
      expect(prior.behaviour).toBe(behaviour);
      // Cache points in the payload if and only if the prior expects writes with a premium.
      expect(explicitMarks(payload)).toBe(prior.behaviour === "explicit");
      if (prior.behaviour === "codex" || (prior.behaviour === "automatic" && m.api.startsWith("openai-responses"))) {
        expect(keyMarks(payload)).toBe(true);
      }
      // The guard pins its own breakpoints only where Pi's Anthropic payload carries cache_control.
      expect(prior.pins).toBe(m.api === "anthropic-messages");
    });
  }

  it("cacheFamily is the prior in the break-even rules' terms", () => {
    expect(cacheFamily({ api: "anthropic-messages", provider: "anthropic" })).toBe("anthropic");
    expect(
      cacheFamily({
        api: "bedrock-converse-stream",
        provider: "amazon-bedrock",
        id: "anthropic.claude-sonnet-4-5-v1:0",
      }),
    ).toBe("anthropic");
    expect(cacheFamily({ api: "google-generative-ai", provider: "google" })).toBe("other");
    expect(cacheFamily({ api: "openai-codex-responses" })).toBe("openai-codex");
  });
});
