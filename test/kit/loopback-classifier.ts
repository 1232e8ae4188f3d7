/**
 * A loopback TypeSafe System One server for tests and benchmarks.
 *
 * It speaks the wire format of pi-ai's `typesafe-system-one` client
 * (`node_modules/@earendil-works/pi-ai/dist/api/system-one-shared.js`):
 *
 * - request: `POST <baseUrl>/systemone` with `{model, state, questions: {id: {type: "noul"|"choice"|"score", instructions, criteria}}}`
 *   (public `bool` questions travel as `noul`; `temperature` is never sent);
 * - response: `200 {answers: {id: {type:"noul", noul} | {type:"choice", choice, probabilities, confidence} | {type:"score", score, confidence}},
 *   usage: {input_tokens, output_tokens: 0}}`.
 *
 * The client checks that every asked id is answered with the matching type and finite numbers. It does NOT check
 * that probabilities lie in [0, 1] or sum to 1: a `noul` of 1.7 reaches the caller as `probability: 1.7`.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { crc32, deflateRawSync, constants as zlibConstants } from "node:zlib";
import { listenOnLoopback } from "./loopback-server.ts";
import { mulberry32 } from "./prng.ts";

export type Behaviour =
  | "answer"
  | "hang"
  | "error500"
  | "error429"
  /**
   * 500 whose body echoes what a careless gateway would: the first 20 characters of the request's key
   * (`authorization` without `Bearer `) and the value of the `echoHeader` request header.
   */
  | "echo-credentials"
  | "malformed"
  | "missing-ids"
  | "wrong-types"
  | "nan"
  /** 200 with the answer body sent one byte every `dripIntervalMs`: it never completes within a deadline. */
  | "drip"
  /** Reads the request, then resets the TCP connection (the client sees ECONNRESET / "fetch failed"). */
  | "reset"
  /** 200 with a body of `hugeBytes`: not a System One answer unless `hugeValid` (then valid answers + padding). */
  | "huge"
  /** Answers normally, but only after `lateMs` (longer than the caller's deadline). */
  | "late"
  /**
   * Raw bytes on the socket (node:http cannot write these): `HTTP/1.1 <rawStatus>`, a small JSON body (the
   * answers), then the connection closes. For statuses the Response constructor rejects (`000`, a 1xx, `600`,
   * `999`) and reason phrases with non-ASCII or control characters.
   */
  | "raw-status"
  /**
   * 200, `content-encoding: gzip`, about 1 MB on the wire that inflates to `bombBytes` of zeros (built once per
   * size, kept in memory).
   */
  | "gzip-bomb"
  /** 200, `transfer-encoding: chunked`, a first chunk with half of the answer JSON, then the socket is destroyed. */
  | "truncated-chunked";

export interface WireBoolQuestion {
  type: "noul";
  instructions: string;
  criteria: { true: string; false: string };
}
export interface WireChoiceQuestion {
  type: "choice";
  instructions: string;
  criteria: Record<string, string>;
}
export interface WireScoreQuestion {
  type: "score";
  instructions: string;
  criteria: string[];
}
export type WireQuestion = WireBoolQuestion | WireChoiceQuestion | WireScoreQuestion;

export interface SystemOneRequestBody {
  model: string;
  /** The classifier state. With images (OpenRouter form) it is `[...imageParts, state]`. */
  state: unknown;
  questions: Record<string, WireQuestion>;
  [extra: string]: unknown;
}

export type WireAnswer =
  | { type: "noul"; noul: number | string }
  | { type: "choice"; choice: string; probabilities: Record<string, number>; confidence: number | string }
  | { type: "score"; score: number | string; confidence: number };

export type AnswerPolicy = (body: SystemOneRequestBody) => Record<string, WireAnswer>;

export interface LoopbackOptions {
  /**
   * Response time of every request, in ms, counted from its arrival: the server's own work (reading,
   * parsing, the policy) is part of it, as a remote service's is. Default 0.
   */
  latencyMs?: number;
  /** Extra uniform random delay in [0, jitterMs), from a seeded PRNG. Default 0. */
  jitterMs?: number;
  /**
   * Answers wait for this too (after `latencyMs`): a test lets them go once it has seen what must happen
   * before any answer, instead of betting on a latency.
   */
  hold?: Promise<unknown>;
  /** PRNG seed for the jitter. Default 1. */
  seed?: number;
  /** Default "answer". */
  behaviour?: Behaviour;
  /** Answers for behaviours that answer. Default {@link neutralPolicy}. */
  policy?: AnswerPolicy;
  /** Default "/api/v1" (the path of OpenRouter's base URL). */
  basePath?: string;
  /**
   * The value that behaviour "nan" puts in numeric fields. Default the string "NaN" (pi-ai rejects it:
   * `stopReason: "error"`). A number such as 1.7 is ACCEPTED by pi-ai, so it exercises the caller's own range checks.
   */
  nanValue?: number | string;
  /** Behaviour "echo-credentials": the request header whose value the error body repeats. Default none. */
  echoHeader?: string;
  /** `usage.input_tokens` for a request. Default `ceil(JSON.stringify(state).length / 4)`. */
  inputTokens?: (body: SystemOneRequestBody) => number;
  /** Behaviour "drip": ms between body bytes. Default 200. */
  dripIntervalMs?: number;
  /** Behaviour "late": ms before the answer. Default 10 000. */
  lateMs?: number;
  /** Behaviour "huge": body size in bytes. Default 32 MiB. */
  hugeBytes?: number;
  /** Behaviour "huge": send well-formed answers padded to `hugeBytes` instead of a non-answer. Default false. */
  hugeValid?: boolean;
  /**
   * Behaviour "raw-status": what follows `HTTP/1.1 ` on the status line, e.g. `"000 Zero"`. A string goes out as
   * UTF-8; bytes go out as they are (a Latin-1 reason phrase). Default `"999 Weird"`.
   */
  rawStatus?: string | Uint8Array;
  /** Behaviour "gzip-bomb": the inflated size in bytes, a multiple of 1 MiB. Default 1 GiB. */
  bombBytes?: number;
}

export interface LoopbackClassifier {
  /** e.g. `http://127.0.0.1:PORT/api/v1`: use as the provider baseUrl. */
  baseUrl: string;
  port: number;
  /** Every parsed request body, in arrival order (including requests answered with an error). */
  requests: SystemOneRequestBody[];
  /** Answers of behaviour "late" that were written after their delay (the client had not hung up). */
  lateAnswers: number;
  /** Answers written (behaviour "answer"), so far. */
  answered: number;
  /** When each of them was written (performance.now()): tests order events against the first answer. */
  answeredAt: readonly number[];
  /** Request headers, parallel to `requests`. */
  requestHeaders: IncomingHttpHeaders[];
  /** Change options for later requests. Setting `seed` restarts the jitter PRNG. */
  set(opts: Partial<LoopbackOptions>): void;
  /** Stops the server, destroys open (also hanging) connections and pending timers. */
  close(): Promise<void>;
}

// ------------------------------------------------------------------------------------------------------------------
// Policies

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The state object itself: with images the wire state is `[...parts, state]`, so take the last object. */
export function stateObject(body: SystemOneRequestBody): Record<string, unknown> {
  const { state } = body;
  if (isRecord(state)) return state;
  if (Array.isArray(state)) {
    for (let i = state.length - 1; i >= 0; i--) {
      const item: unknown = state[i];
      if (isRecord(item)) return item;
    }
  }
  return {};
}

function textOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (isRecord(value) && typeof value.text === "string") return value.text;
  return JSON.stringify(value);
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

/** A choice answer with `peak` on `choice` and the rest spread evenly; confidence as pi-ai's llama-cpp math. */
export function choiceAnswer(keys: string[], choice: string, peak: number): WireAnswer {
  const n = keys.length;
  const probabilities: Record<string, number> = {};
  for (const key of keys) probabilities[key] = key === choice ? (n === 1 ? 1 : peak) : (1 - peak) / (n - 1);
  const top = probabilities[choice] ?? peak;
  const confidence = n > 1 ? clamp01((n * top - 1) / (n - 1)) : 1;
  return { type: "choice", choice, probabilities, confidence };
}

function scoreAnswer(levels: string[]): WireAnswer {
  return { type: "score", score: Math.max(0, levels.length - 1) / 2, confidence: 0.5 };
}

/** Answers everything neutrally: noul 0.5, choice = first key (uniform), score = middle level. */
export const neutralPolicy: AnswerPolicy = (body) => {
  const answers: Record<string, WireAnswer> = {};
  for (const [id, q] of Object.entries(body.questions)) {
    if (q.type === "noul") answers[id] = { type: "noul", noul: 0.5 };
    else if (q.type === "choice") {
      const keys = Object.keys(q.criteria);
      answers[id] = choiceAnswer(keys, keys[0] ?? "", keys.length > 0 ? 1 / keys.length : 1);
    } else answers[id] = scoreAnswer(q.criteria);
  }
  return answers;
};

/**
 * Deterministic keyword policy:
 * - `keep_whole` (noul) → `keepWhole ?? 0.1`;
 * - `chunk_N` (noul) → 0.9 when `state.chunks.chunk_N` matches `keep`, else 0.05;
 * - `focus` (choice) → the first criteria key whose chunk matches (0.7, rest spread), else `none` (0.8);
 * - other noul ids → 0.9 / 0.05 by the text at `state.items[id]` or `state[id]`; 0.5 when there is no such text;
 * - other choice ids → the first criteria key (0.7); score → the middle level.
 */
export function keywordPolicy(keep: RegExp, opts?: { keepWhole?: number }): AnswerPolicy {
  const re = new RegExp(keep.source, keep.flags.replace(/[gy]/g, ""));
  const matches = (text: string | undefined): boolean | undefined => (text === undefined ? undefined : re.test(text));
  return (body) => {
    const state = stateObject(body);
    const chunks = isRecord(state.chunks) ? state.chunks : {};
    const items = isRecord(state.items) ? state.items : {};
    const answers: Record<string, WireAnswer> = {};
    for (const [id, q] of Object.entries(body.questions)) {
      if (q.type === "noul") {
        let p: number;
        if (id === "keep_whole") p = opts?.keepWhole ?? 0.1;
        else if (/^chunk_\d+$/.test(id)) p = matches(textOf(chunks[id])) ? 0.9 : 0.05;
        else {
          const hit = matches(textOf(items[id] ?? state[id]));
          p = hit === undefined ? 0.5 : hit ? 0.9 : 0.05;
        }
        answers[id] = { type: "noul", noul: p };
      } else if (q.type === "choice") {
        const keys = Object.keys(q.criteria);
        if (id === "focus") {
          const first = keys.find((k) => k !== "none" && matches(textOf(chunks[k])) === true);
          if (first !== undefined) answers[id] = choiceAnswer(keys, first, 0.7);
          else
            answers[id] = choiceAnswer(keys, keys.includes("none") ? "none" : (keys[keys.length - 1] ?? "none"), 0.8);
        } else {
          answers[id] = choiceAnswer(keys, keys[0] ?? "", 0.7);
        }
      } else {
        answers[id] = scoreAnswer(q.criteria);
      }
    }
    return answers;
  };
}

// ------------------------------------------------------------------------------------------------------------------
// Behaviour transforms

function dropSomeIds(answers: Record<string, WireAnswer>, asked: string[]): Record<string, WireAnswer> {
  // Drop every other asked id, starting with the first, so at least one is always missing.
  const out = { ...answers };
  asked.forEach((id, i) => {
    if (i % 2 === 0) delete out[id];
  });
  return out;
}

function wrongTypes(answers: Record<string, WireAnswer>): Record<string, WireAnswer> {
  const out: Record<string, WireAnswer> = {};
  for (const [id, a] of Object.entries(answers)) {
    if (a.type === "noul") {
      const p = typeof a.noul === "number" ? clamp01(a.noul) : 0.5;
      out[id] = {
        type: "choice",
        choice: p >= 0.5 ? "true" : "false",
        probabilities: { true: p, false: 1 - p },
        confidence: 0.5,
      };
    } else {
      out[id] = { type: "noul", noul: 0.5 };
    }
  }
  return out;
}

function nanAnswers(answers: Record<string, WireAnswer>, nanValue: number | string): Record<string, WireAnswer> {
  const out: Record<string, WireAnswer> = {};
  for (const [id, a] of Object.entries(answers)) {
    if (a.type === "noul") out[id] = { type: "noul", noul: nanValue };
    else if (a.type === "choice") out[id] = { ...a, confidence: nanValue };
    else out[id] = { ...a, score: nanValue };
  }
  return out;
}

// ------------------------------------------------------------------------------------------------------------------
// Server

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A `bytes`-long 200 body: padded valid answers (`valid`), or a JSON object without usable answers. */
function sendHuge(res: ServerResponse, reply: unknown, bytes: number, valid: boolean): void {
  const head = valid ? `${JSON.stringify(reply).slice(0, -1)},"padding":"` : '{"answers":"';
  const tail = valid ? '"}' : '"}';
  const pad = Math.max(0, bytes - Buffer.byteLength(head) - tail.length);
  const body = Buffer.concat([Buffer.from(head), Buffer.alloc(pad, 0x78), Buffer.from(tail)]);
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length });
  res.end(body);
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

// Raw responses: behaviours "raw-status", "gzip-bomb", "truncated-chunked".

const MIB = 1024 * 1024;
const bombs = new Map<number, Buffer>();

/**
 * A gzip member that inflates to `bytes` zeros (a multiple of 1 MiB), cached per size: one deflate block of 1 MiB
 * of zeros, ended with a full flush (byte-aligned, no reference across it), repeated, then an empty final block
 * and the trailer. About 1 KB per MiB on the wire; building 1 GiB takes the CRC's time (~0.2 s) and no more
 * memory than the result, instead of deflating 1 GiB (~2.5 s).
 */
export function gzipBomb(bytes = 1024 * MIB): Buffer {
  const cached = bombs.get(bytes);
  if (cached) return cached;
  if (!Number.isInteger(bytes / MIB) || bytes <= 0) throw new Error(`gzipBomb: ${bytes} is not a multiple of 1 MiB`);
  const zeros = Buffer.alloc(MIB);
  const block = deflateRawSync(zeros, { level: 9, finishFlush: zlibConstants.Z_FULL_FLUSH });
  let crc = 0;
  for (let i = 0; i < bytes / MIB; i++) crc = crc32(zeros, crc);
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(bytes % 2 ** 32, 4);
  const last = Buffer.from([0x03, 0x00]); // a final, empty fixed-Huffman block
  const bomb = Buffer.concat([header, ...Array.from({ length: bytes / MIB }, () => block), last, trailer]);
  bombs.set(bytes, bomb);
  return bomb;
}

/** `HTTP/1.1 <status>`, a JSON body with its length, then the connection closes. */
function sendRawStatus(socket: Socket, status: string | Uint8Array, body: string): void {
  const payload = Buffer.from(body);
  const head = `\r\ncontent-type: application/json\r\ncontent-length: ${payload.length}\r\nconnection: close\r\n\r\n`;
  const line = typeof status === "string" ? Buffer.from(status, "utf8") : Buffer.from(status);
  socket.end(Buffer.concat([Buffer.from("HTTP/1.1 "), line, Buffer.from(head), payload]));
}

/** A chunked 200 whose first chunk holds the first half of `body`; the socket is destroyed once it is sent. */
function sendTruncatedChunked(socket: Socket, body: string): void {
  const part = Buffer.from(body.slice(0, Math.max(1, Math.floor(body.length / 2))));
  const head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
  const chunk = Buffer.concat([Buffer.from(`${head}${part.length.toString(16)}\r\n`), part, Buffer.from("\r\n")]);
  socket.write(chunk, () => socket.destroy());
}

function sendGzipBomb(res: ServerResponse, bytes: number | undefined): void {
  const bomb = gzipBomb(bytes);
  res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": bomb.length });
  res.end(bomb);
}

export async function startLoopbackClassifier(opts: LoopbackOptions = {}): Promise<LoopbackClassifier> {
  const options: LoopbackOptions = { ...opts };
  let random = mulberry32(options.seed ?? 1);
  const timers = new Set<NodeJS.Timeout>();
  const requests: SystemOneRequestBody[] = [];
  const requestHeaders: IncomingHttpHeaders[] = [];
  let closed = false;
  let lateAnswers = 0;
  let answered = 0;
  const answeredAt: number[] = [];

  const basePath = (): string => `/${(options.basePath ?? "/api/v1").replace(/^\/+|\/+$/g, "")}`.replace(/^\/$/, "");

  const delay = (ms: number): Promise<void> =>
    ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const t = setTimeout(() => {
            timers.delete(t);
            resolve();
          }, ms);
          timers.add(t);
        });

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const arrived = performance.now();
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const raw = await readBody(req);
    if (req.method !== "POST" || path !== `${basePath()}/systemone`) {
      sendText(res, 404, `loopback classifier: no route for ${req.method} ${path}`);
      return;
    }
    let body: SystemOneRequestBody;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (!isRecord(parsed) || !isRecord(parsed.questions)) throw new Error("expected {model, state, questions}");
      body = parsed as SystemOneRequestBody;
    } catch (error) {
      sendText(res, 400, `loopback classifier: bad request: ${(error as Error).message}`);
      return;
    }
    requests.push(body);
    requestHeaders.push(req.headers);

    const behaviour = options.behaviour ?? "answer";
    if (behaviour === "hang") return; // never answer; close() destroys the socket
    if (behaviour === "reset") {
      req.socket.resetAndDestroy();
      return;
    }

    const jitter = (options.jitterMs ?? 0) > 0 ? random() * (options.jitterMs ?? 0) : 0;
    const asked = Object.keys(body.questions);
    let answers = (options.policy ?? neutralPolicy)(body);
    if (behaviour === "missing-ids") answers = dropSomeIds(answers, asked);
    else if (behaviour === "wrong-types") answers = wrongTypes(answers);
    else if (behaviour === "nan") answers = nanAnswers(answers, options.nanValue ?? "NaN");
    const inputTokens = options.inputTokens?.(body) ?? Math.ceil((JSON.stringify(body.state) ?? "").length / 4);
    const reply = { answers, usage: { input_tokens: inputTokens, output_tokens: 0 } };
    // The latency is the service's response time, as a remote classifier's is: reading the request,
    // parsing it and computing the answers happen within it, not on top of it.
    await delay((options.latencyMs ?? 0) + jitter - (performance.now() - arrived));
    if (options.hold) await options.hold;
    if (closed || res.destroyed || req.socket.destroyed) return;

    switch (behaviour) {
      case "error500":
        sendText(res, 500, "loopback classifier: internal error");
        return;
      case "error429":
        sendText(res, 429, "loopback classifier: rate limited", { "retry-after": "120" });
        return;
      case "echo-credentials": {
        const key = String(req.headers.authorization ?? "").replace(/^Bearer /, "");
        const header = options.echoHeader ? String(req.headers[options.echoHeader.toLowerCase()] ?? "") : "";
        sendText(res, 500, `${key.slice(0, 20)} ${header}`);
        return;
      }
      case "malformed":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"answers": {"oops": not json');
        return;
    }

    if (behaviour === "raw-status") {
      sendRawStatus(req.socket, options.rawStatus ?? "999 Weird", JSON.stringify(reply));
      return;
    }
    if (behaviour === "truncated-chunked") {
      sendTruncatedChunked(req.socket, JSON.stringify(reply));
      return;
    }
    if (behaviour === "gzip-bomb") {
      sendGzipBomb(res, options.bombBytes);
      return;
    }

    if (behaviour === "late") {
      await delay(options.lateMs ?? 10_000);
      if (closed || res.destroyed || req.socket.destroyed) return;
      lateAnswers++;
    } else if (behaviour === "drip") {
      await drip(res, JSON.stringify(reply), options.dripIntervalMs ?? 200);
      return;
    } else if (behaviour === "huge") {
      sendHuge(res, reply, options.hugeBytes ?? 32 * 1024 * 1024, options.hugeValid === true);
      return;
    }
    sendJson(res, 200, reply);
    answered++;
    answeredAt.push(performance.now());
  };

  /** Headers at once, then one byte per interval; stops when the client hangs up or the server closes. */
  const drip = (res: ServerResponse, text: string, intervalMs: number): Promise<void> =>
    new Promise((resolve) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.flushHeaders();
      let i = 0;
      const timer = setInterval(
        () => {
          if (closed || res.destroyed || i >= text.length) {
            clearInterval(timer);
            timers.delete(timer);
            if (!res.destroyed && !closed) res.end();
            resolve();
            return;
          }
          res.write(text[i++] as string);
        },
        Math.max(1, intervalMs),
      );
      timers.add(timer);
      res.on("close", () => {
        clearInterval(timer);
        timers.delete(timer);
        resolve();
      });
    });

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) sendText(res, 500, `loopback classifier crashed: ${String(error)}`);
    });
  });
  const listening = await listenOnLoopback(server, "loopback classifier");
  const port = listening.port;

  return {
    get baseUrl() {
      return `http://127.0.0.1:${port}${basePath()}`;
    },
    port,
    requests,
    requestHeaders,
    get lateAnswers() {
      return lateAnswers;
    },
    get answered() {
      return answered;
    },
    answeredAt,
    set(next) {
      Object.assign(options, next);
      if (next.seed !== undefined) random = mulberry32(next.seed);
    },
    close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return listening.close();
    },
  };
}
