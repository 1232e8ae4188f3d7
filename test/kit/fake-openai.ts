/**
 * A scripted loopback main model for CLI tests: an OpenAI-compatible `POST <base>/v1/chat/completions` (SSE, Pi api
 * `openai-completions`) and an Anthropic-compatible `POST /v1/messages` (SSE, Pi api `anthropic-messages`).
 *
 * The script decides each reply from the request; `index` counts requests across both formats, starting at 0.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback } from "./loopback-server.ts";
import { anthropicShapeProblems, openaiShapeProblems } from "./strict-shapes.ts";

/** Parsed wire JSON: scripts and assertions inspect it freely. */
// biome-ignore lint/suspicious/noExplicitAny: request JSON of two wire formats, inspected ad hoc by tests.
export type WireJson = any;

export interface FakeToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export type FakeReply =
  | { text: string; usage?: FakeUsage }
  | { toolCalls: FakeToolCall[]; text?: string; usage?: FakeUsage }
  /** Answer with an HTTP error instead of a stream. Note Pi retries 429/5xx chat errors (settings `retry`). */
  | { httpError: number; body?: string };

export interface FakeUsage {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

export interface FakeRequest {
  /** `body.messages` (OpenAI or Anthropic shape, per `format`). */
  messages: WireJson[];
  /** `body.tools` or `[]`. */
  tools: WireJson[];
  /** The parsed request body (also the payload after `before_provider_request`). */
  body: WireJson;
  /** 0-based request counter across all formats. */
  index: number;
  format: "openai" | "anthropic";
  headers: IncomingHttpHeaders;
}

export type FakeScript = (req: FakeRequest) => FakeReply | Promise<FakeReply>;

export interface FakeOpenAI {
  /** `http://127.0.0.1:PORT/v1`: the baseUrl of an `openai-completions` provider. */
  baseUrl: string;
  /** `http://127.0.0.1:PORT`: the baseUrl of an `anthropic-messages` provider (the SDK appends `/v1/messages`). */
  anthropicBaseUrl: string;
  port: number;
  /** Parsed request bodies, in arrival order. */
  requests: WireJson[];
  /** Details per request, parallel to `requests`. */
  log: FakeRequest[];
  /** Requests the `strict` option rejected, with what was wrong. */
  rejected: Array<{ index: number; problems: string[] }>;
  close(): Promise<void>;
}

/** Rough token estimate used for synthetic usage: 4 characters per token. */
function estimateTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? "").length / 4);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function openaiEvents(reply: Exclude<FakeReply, { httpError: number }>, req: FakeRequest): string[] {
  const model = typeof req.body?.model === "string" ? req.body.model : "fake-model";
  const id = `chatcmpl-fake-${req.index}`;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const usage = reply.usage ?? { input: estimateTokens(req.body?.messages), output: 10 };
  const usageChunk = `data: ${JSON.stringify({
    id,
    object: "chat.completion.chunk",
    created: 0,
    model,
    choices: [],
    usage: {
      prompt_tokens: usage.input + (usage.cacheRead ?? 0),
      completion_tokens: usage.output,
      total_tokens: usage.input + (usage.cacheRead ?? 0) + usage.output,
      ...(usage.cacheRead ? { prompt_tokens_details: { cached_tokens: usage.cacheRead } } : {}),
    },
  })}\n\n`;
  const events: string[] = [];
  if ("toolCalls" in reply) {
    events.push(chunk({ role: "assistant", content: reply.text ?? null }));
    reply.toolCalls.forEach((call, i) => {
      events.push(
        chunk({
          tool_calls: [
            { index: i, id: `call_${req.index}_${i}`, type: "function", function: { name: call.name, arguments: "" } },
          ],
        }),
      );
      events.push(chunk({ tool_calls: [{ index: i, function: { arguments: JSON.stringify(call.arguments) } }] }));
    });
    events.push(chunk({}, "tool_calls"));
  } else {
    events.push(chunk({ role: "assistant", content: "" }));
    events.push(chunk({ content: reply.text }));
    events.push(chunk({}, "stop"));
  }
  events.push(usageChunk, "data: [DONE]\n\n");
  return events;
}

function anthropicEvents(reply: Exclude<FakeReply, { httpError: number }>, req: FakeRequest): string[] {
  const model = typeof req.body?.model === "string" ? req.body.model : "claude-fake";
  const ev = (type: string, data: Record<string, unknown>): string =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const usage = reply.usage ?? { input: estimateTokens(req.body?.messages), output: 10 };
  const events: string[] = [
    ev("message_start", {
      message: {
        id: `msg_fake_${req.index}`,
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.input,
          output_tokens: 0,
          cache_read_input_tokens: usage.cacheRead ?? 0,
          cache_creation_input_tokens: usage.cacheWrite ?? 0,
        },
      },
    }),
  ];
  let index = 0;
  const text = reply.text;
  if (text !== undefined && text.length > 0) {
    events.push(ev("content_block_start", { index, content_block: { type: "text", text: "" } }));
    events.push(ev("content_block_delta", { index, delta: { type: "text_delta", text } }));
    events.push(ev("content_block_stop", { index }));
    index++;
  }
  if ("toolCalls" in reply) {
    reply.toolCalls.forEach((call, i) => {
      events.push(
        ev("content_block_start", {
          index,
          content_block: { type: "tool_use", id: `toolu_${req.index}_${i}`, name: call.name, input: {} },
        }),
      );
      events.push(
        ev("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(call.arguments) },
        }),
      );
      events.push(ev("content_block_stop", { index }));
      index++;
    });
  }
  events.push(
    ev("message_delta", {
      delta: { stop_reason: "toolCalls" in reply ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
  );
  events.push(ev("message_stop", {}));
  return events;
}

export interface FakeOptions {
  /**
   * Reject, as OpenAI and Anthropic do (HTTP 400), a request whose tool messages do not pair with the
   * calls before them (test/kit/strict-shapes.ts); the script is not asked. `rejected` lists them.
   */
  strict?: boolean;
}

export async function startFakeOpenAI(script: FakeScript, options: FakeOptions = {}): Promise<FakeOpenAI> {
  const requests: WireJson[] = [];
  const log: FakeRequest[] = [];
  const rejected: FakeOpenAI["rejected"] = [];
  let counter = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const raw = await readBody(req);
    let format: FakeRequest["format"] | undefined;
    if (req.method === "POST" && path.endsWith("/chat/completions")) format = "openai";
    else if (req.method === "POST" && path.endsWith("/messages")) format = "anthropic";
    if (format === undefined) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end(`fake model server: no route for ${req.method} ${path}`);
      return;
    }
    let body: WireJson;
    try {
      body = JSON.parse(raw);
    } catch {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("fake model server: body is not JSON");
      return;
    }
    const request: FakeRequest = {
      messages: Array.isArray(body?.messages) ? body.messages : [],
      tools: Array.isArray(body?.tools) ? body.tools : [],
      body,
      index: counter++,
      format,
      headers: req.headers,
    };
    requests.push(body);
    log.push(request);
    if (options.strict) {
      const problems =
        format === "openai" ? openaiShapeProblems(request.messages) : anthropicShapeProblems(request.messages);
      if (problems.length > 0) {
        rejected.push({ index: request.index, problems });
        const message = problems[0]?.replace(/^messages\.\[?\d+\]?(\.role)?: /, "") ?? "";
        const error =
          format === "openai"
            ? { error: { message, type: "invalid_request_error", param: "messages", code: null } }
            : { type: "error", error: { type: "invalid_request_error", message } };
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify(error));
        return;
      }
    }
    const reply = await script(request);
    if ("httpError" in reply) {
      const text = reply.body ?? JSON.stringify({ error: { message: `fake error ${reply.httpError}`, type: "fake" } });
      res.writeHead(reply.httpError, { "content-type": "application/json" });
      res.end(text);
      return;
    }
    const events = format === "openai" ? openaiEvents(reply, request) : anthropicEvents(reply, request);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.end(events.join(""));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`fake model server crashed: ${error instanceof Error ? error.stack : String(error)}`);
      }
    });
  });
  const listening = await listenOnLoopback(server, "fake model server");
  const port = listening.port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    anthropicBaseUrl: `http://127.0.0.1:${port}`,
    port,
    requests,
    log,
    rejected,
    close: () => listening.close(),
  };
}

/** The text of a wire message, whether its content is a string or a list of parts. */
export const wireText = (m: WireJson): string =>
  typeof m?.content === "string"
    ? m.content
    : Array.isArray(m?.content)
      ? m.content.map((b: WireJson) => b?.text ?? "").join("")
      : "";

/** Where a scripted run stands: the last user message's text, and how many tool results have come since. */
export function lastPrompt(messages: WireJson[]): { prompt: string; done: number } {
  let lastUser = messages.length - 1;
  while (lastUser >= 0 && messages[lastUser]?.role !== "user") lastUser--;
  const done = messages.slice(lastUser + 1).filter((m: WireJson) => m.role === "tool").length;
  return { prompt: wireText(messages[lastUser]), done };
}
