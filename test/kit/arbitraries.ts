// fast-check arbitraries for tool outputs and whole sessions, and a builder that turns a generated session
// into a real Pi SessionManager (so drafts are checked against Pi's own projection and append rules).
import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { makeJpeg, makePng, mulberry32 } from "./generate.ts";
import { FAUX_USAGE } from "./pi-messages.ts";

/** Seed and run count of every property: fixed for CI; CG_PROPERTY_RUNS / CG_PROPERTY_SEED for long runs. */
export function propertyParams(numRuns: number): { seed: number; numRuns: number } {
  const runs = Number(process.env.CG_PROPERTY_RUNS);
  const seed = Number(process.env.CG_PROPERTY_SEED);
  return { seed: Number.isFinite(seed) ? seed : 42, numRuns: Number.isFinite(runs) && runs > 0 ? runs : numRuns };
}

// ---------------------------------------------------------------------------------------------------------
// Tool outputs

const PATHS = ["src/a.ts", "src/b/c.ts", "lib/x-1-y.ts", "2024-05-01-post.md", "./d.ts", "a b.ts", "ü/ñ.ts"];
/** Characters that break naive text handling: NUL, lone surrogates, CR, escapes, astral and line separators. */
const WEIRD = [
  "\u0000",
  "\ud800",
  "\udfff",
  "\r",
  "\t",
  "é",
  "😀",
  "\u2028",
  "\u001b[31m",
  "\\",
  '"',
  "\uFFFD",
  "\u0085",
];

const word = fc.string({ maxLength: 24, unit: "grapheme-ascii" });
const weirdWord = fc
  .array(fc.oneof(word, fc.constantFrom(...WEIRD), fc.string({ maxLength: 6, unit: "binary" })), { maxLength: 8 })
  .map((parts) => parts.join(""));

/** One line of an output: grep matches and context, separators, prose, binary-ish noise, long lines. */
export const lineArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...PATHS), fc.nat(900), word).map(([p, n, w]) => `${p}:${n}:${w}`) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...PATHS), fc.nat(900), word).map(([p, n, w]) => `${p}-${n}-${w}`) },
  { weight: 1, arbitrary: fc.constantFrom("--", "", "   ") },
  { weight: 3, arbitrary: word },
  { weight: 2, arbitrary: weirdWord },
  { weight: 1, arbitrary: fc.integer({ min: 900, max: 6000 }).map((n) => "z".repeat(n)) },
);

/** A whole output: a block of lines repeated up to 40 times, LF or CRLF, with or without a final newline. */
export const outputArb: fc.Arbitrary<string> = fc
  .record({
    lines: fc.array(lineArb, { minLength: 1, maxLength: 60 }),
    repeat: fc.integer({ min: 1, max: 40 }),
    crlf: fc.boolean(),
    trailing: fc.boolean(),
  })
  .map(({ lines, repeat, crlf, trailing }) => {
    const block: string[] = [];
    for (let r = 0; r < repeat; r++) for (const l of lines) block.push(repeat > 1 ? `${l}${r}` : l);
    const text = block.join(crlf ? "\r\n" : "\n");
    return trailing ? `${text}${crlf ? "\r\n" : "\n"}` : text;
  });

// ---------------------------------------------------------------------------------------------------------
// Images: valid, truncated and corrupt headers

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

export const imageArb: fc.Arbitrary<{ type: "image"; data: string; mimeType: string }> = fc
  .record({
    kind: fc.constantFrom("png", "jpeg", "truncated-png", "truncated-jpeg", "garbage", "empty", "not-base64", "lying"),
    seed: fc.nat(1000),
  })
  .map(({ kind, seed }) => {
    const rng = mulberry32(seed + 1);
    const png = makePng(rng, 200 + seed, 100 + seed, 2000);
    const jpeg = makeJpeg(rng, 300, 200, 3000);
    switch (kind) {
      case "png":
        return { type: "image" as const, data: b64(png), mimeType: "image/png" };
      case "jpeg":
        return { type: "image" as const, data: b64(jpeg), mimeType: "image/jpeg" };
      case "truncated-png":
        return { type: "image" as const, data: b64(png.slice(0, 5 + (seed % 20))), mimeType: "image/png" };
      case "truncated-jpeg":
        return { type: "image" as const, data: b64(jpeg.slice(0, 3 + (seed % 40))), mimeType: "image/jpeg" };
      case "garbage":
        return {
          type: "image" as const,
          data: b64(png.map((b, i) => (i < 40 ? (b ^ 0x5a) & 0xff : b))),
          mimeType: "image/png",
        };
      case "empty":
        return { type: "image" as const, data: "", mimeType: "image/webp" };
      case "not-base64":
        return { type: "image" as const, data: "!!!not base64 at all???", mimeType: "image/gif" };
      default:
        return { type: "image" as const, data: b64(jpeg), mimeType: "image/png" };
    }
  });

// ---------------------------------------------------------------------------------------------------------
// Sessions

export interface GenCall {
  tool: string;
  args: Record<string, unknown>;
  output: string;
  isError: boolean;
  images: Array<{ type: "image"; data: string; mimeType: string }>;
}

export interface GenTurn {
  text: string;
  calls: GenCall[];
}

export interface GenExchange {
  prompt: string;
  turns: GenTurn[];
  answer: string;
  /** A steering message sent during the run (after the first turn). */
  steering?: string;
}

export interface GenSession {
  exchanges: GenExchange[];
  /** The last exchange is still running (no final answer): a mid-run checkpoint applies. */
  running: boolean;
  /** Entries of types the extension does not know, spliced in. */
  unknownEntries: boolean;
}

const smallOutput = fc.oneof(
  weirdWord,
  fc.array(lineArb, { maxLength: 10 }).map((l) => l.join("\n")),
);
const callArb: fc.Arbitrary<GenCall> = fc.record({
  tool: fc.constantFrom("bash", "bash", "read", "grep", "edit", "write", "mcp_search"),
  args: fc.oneof(
    fc.record({ command: word }),
    fc.record({ path: fc.constantFrom(...PATHS) }),
    fc.record({ path: fc.constantFrom(...PATHS), offset: fc.integer({ min: -5, max: 50 }) }),
  ),
  output: fc.oneof({ weight: 3, arbitrary: outputArb }, { weight: 2, arbitrary: smallOutput }),
  isError: fc.boolean(),
  images: fc.oneof(
    { weight: 4, arbitrary: fc.constant<GenCall["images"]>([]) },
    { weight: 1, arbitrary: fc.array(imageArb, { maxLength: 3 }) },
  ),
});
const turnArb: fc.Arbitrary<GenTurn> = fc.record({
  text: fc.oneof(fc.constant(""), word),
  calls: fc.array(callArb, { minLength: 1, maxLength: 3 }),
});
const exchangeArb: fc.Arbitrary<GenExchange> = fc.record(
  {
    prompt: fc.oneof(
      word,
      weirdWord,
      fc.integer({ min: 100, max: 3000 }).map((n) => `prompt ${"p".repeat(n)}`),
    ),
    turns: fc.array(turnArb, { maxLength: 5 }),
    answer: fc.oneof(word, weirdWord),
    steering: word,
  },
  { requiredKeys: ["prompt", "turns", "answer"] },
);

export const sessionArb: fc.Arbitrary<GenSession> = fc.record({
  exchanges: fc.array(exchangeArb, { minLength: 1, maxLength: 5 }),
  running: fc.boolean(),
  unknownEntries: fc.boolean(),
});

function assistant(content: unknown[], stopReason: string, timestamp: number) {
  return {
    role: "assistant",
    content,
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: FAUX_USAGE,
    stopReason,
    timestamp,
  };
}

/** Builds the session in a real in-memory SessionManager, the way Pi appends entries during runs. */
export function buildSession(gen: GenSession): SessionManager {
  const sm = SessionManager.inMemory("/tmp/cg-prop");
  sm.appendModelChange("faux", "faux-1");
  sm.appendThinkingLevelChange("off");
  let t = 1_700_000_000_000;
  let call = 0;
  gen.exchanges.forEach((ex, xi) => {
    const last = xi === gen.exchanges.length - 1;
    sm.appendMessage({ role: "user", content: [{ type: "text", text: ex.prompt }], timestamp: t++ } as never);
    if (gen.unknownEntries) {
      // What a future Pi version or another tool might leave in the file: kept, never understood.
      sm.appendCustomEntry("someone-else", { any: ["thing", 1] });
      sm.appendCustomEntry("context-guard", { results: "damaged", phase: 7 });
      sm.appendCustomEntry("context-guard", { phase: "mid-run", results: [null, 5, { kind: "large" }, "x"] });
    }
    ex.turns.forEach((turn, ti) => {
      const calls = turn.calls.map((c) => ({ ...c, id: `call_${call++}` }));
      const content = [
        ...(turn.text ? [{ type: "text", text: turn.text }] : []),
        ...calls.map((c) => ({ type: "toolCall", id: c.id, name: c.tool, arguments: c.args })),
      ];
      sm.appendMessage(assistant(content, "toolUse", t++) as never);
      for (const c of calls) {
        sm.appendMessage({
          role: "toolResult",
          toolCallId: c.id,
          toolName: c.tool,
          content: [{ type: "text", text: c.output }, ...c.images],
          isError: c.isError,
          timestamp: t++,
        } as never);
      }
      if (ti === 0 && ex.steering) {
        sm.appendMessage({ role: "user", content: [{ type: "text", text: ex.steering }], timestamp: t++ } as never);
      }
    });
    if (!(last && gen.running)) sm.appendMessage(assistant([{ type: "text", text: ex.answer }], "stop", t++) as never);
  });
  return sm;
}

/** A deterministic answerer for any request, from a seed: clear, borderline, invalid, failed or missing answers. */
export function randomAnswers(seed: number) {
  const rng = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)] as T;
  const PROBS = [0, 0.02, 0.2, 0.45, 0.5, 0.6, 0.98, 1, Number.NaN, 1.7, -0.3, Number.POSITIVE_INFINITY];
  return (request: { questions: Record<string, { type: string; criteria: Record<string, string> }> }) => {
    const r = rng();
    if (r < 0.08) return { status: "error" as const, error: "injected" };
    if (r < 0.14) return { status: "timeout" as const };
    const answers: Record<string, unknown> = {};
    for (const [id, q] of Object.entries(request.questions)) {
      if (rng() < 0.05) continue; // missing id
      if (q.type === "bool") answers[id] = { type: "bool", probability: pick(PROBS) };
      else {
        const keys = Object.keys(q.criteria);
        const choice = rng() < 0.05 ? "chunk_999" : pick(keys);
        const probabilities = Object.fromEntries(keys.map((k) => [k, k === choice ? pick(PROBS) : rng() * 0.3]));
        answers[id] = { type: "choice", choice, probabilities };
      }
    }
    return { status: "stop" as const, answers };
  };
}
