import { z } from "zod";
import { DEFAULT_KEEP_RULES, KEEP_RULES } from "../items/keep-rule-names.ts";
import { nearest } from "./nearest.ts";

// Each key is validated on its own so one bad value costs only that key: it falls back to its default
// and produces a warning that names it. Each key's JSDoc says what it does, its bounds and its default;
// test/unit/core/shared/config-docs.test.ts holds them, and the README's table, to the schema.

const prob = z.number().min(0).max(1);
const int = (min: number, max: number) => z.number().int().min(min).max(max);

/** One tool namespace: a name prefix and/or explicit tool names, with an optional one-line description. */
const toolNamespace = z
  .object({
    prefix: z.string().min(1).optional(),
    tools: z.array(z.string().min(1)).optional(),
    description: z.string().max(300).optional(),
  })
  .strict()
  .refine((ns) => Boolean(ns.prefix) || (ns.tools?.length ?? 0) > 0, "needs a prefix or a tools list");
const namespaceName = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "names use letters, digits, _ . - (≤ 64)");

export const CONFIG_SCHEMA = {
  /**
   * Master switch: off, nothing is judged, edited or routed. `/guard on` and `/guard off` write it.
   * @default true
   */
  enabled: z.boolean(),
  /**
   * The classifier as `provider/id` from Pi's model catalog; `local/lexical` is the offline scorer.
   * @default "openrouter/~typesafe/jev-latest"
   */
  model: z.string().regex(/^[^/\s]+\/\S+$/, "expected provider/id"),
  /**
   * A tool output from this many characters is chunked and judged chunk by chunk.
   * Bounds: 1–10000000.
   * @default 4000
   */
  minResultChars: int(1, 10_000_000),
  /**
   * A run's large outputs are judged only when together they reach this many characters.
   * Bounds: 0–100000000.
   * @default 8000
   */
  minRunChars: int(0, 100_000_000),
  /**
   * A segment stays whole when P(the whole output is needed) reaches this.
   * Bounds: 0–1.
   * @default 0.7
   */
  keepWholeThreshold: prob,
  /**
   * A segment stays whole when the focus question picks "whole" with at least this probability.
   * Bounds: 0–1.
   * @default 0.6
   */
  focusWholeThreshold: prob,
  /**
   * A chunk is kept when P(needed) reaches this.
   * Bounds: 0–1.
   * @default 0.6
   */
  chunkKeepThreshold: prob,
  /**
   * A segment is dropped when the focus question picks "none" with this probability and no chunk passes.
   * Bounds: 0–1.
   * @default 0.5
   */
  noneThreshold: prob,
  /**
   * No edit when more than this share of the original would stay.
   * Bounds: 0–1.
   * @default 0.6
   */
  maxKeepRatio: prob,
  /**
   * Keep the grep chunks of every file the run's final answer names.
   * @default false
   */
  keepCitedFiles: z.boolean(),
  /**
   * Time budget of one pass, in milliseconds; whatever is unanswered by then is kept.
   * Bounds: 100–600000.
   * @default 8000
   */
  timeoutMs: int(100, 600_000),
  /**
   * Classifier requests in flight at once.
   * Bounds: 1–64.
   * @default 6
   */
  concurrency: int(1, 64),
  /**
   * Most output characters sent in one request.
   * Bounds: 1000–1000000.
   * @default 32000
   */
  maxSegmentChars: int(1_000, 1_000_000),
  /**
   * Most chunks in one request.
   * Bounds: 1–200.
   * @default 40
   */
  maxChunksPerSegment: int(1, 200),
  /**
   * Tools whose outputs are never judged.
   * @default ["edit", "write"]
   */
  excludeTools: z.array(z.string()),
  /**
   * Never judge a `read`'s output unless the run read or edited that file again since; one whose file later
   * changed on disk is still replaced by its stub.
   * @default true
   */
  keepReads: z.boolean(),
  /**
   * Judge the output of failed commands too.
   * @default true
   */
  distillErrors: z.boolean(),
  /**
   * Earlier exchanges sent to the classifier as context; `0` sends none.
   * Bounds: 0–10.
   * @default 3
   */
  historyExchanges: int(0, 10),
  /**
   * Time limit of one `recall` regex search, in milliseconds.
   * Bounds: 50–60000.
   * @default 1000
   */
  recallTimeoutMs: int(50, 60_000),
  /**
   * A tool result's images are dropped once this many replies followed it.
   * Bounds: 1–1000.
   * @default 3
   */
  imageKeepTurns: int(1, 1000),
  /**
   * Outputs from this size up to `minResultChars` are judged whole; `0` turns it off.
   * Bounds: 0–1000000.
   * @default 400
   */
  smallResultMinChars: int(0, 1_000_000),
  /**
   * A small output stays when P(still needed) reaches this.
   * Bounds: 0–1.
   * @default 0.35
   */
  smallKeepThreshold: prob,
  /**
   * Judge old exchanges and omit the unrelated ones.
   * @default true
   */
  pruneExchanges: z.boolean(),
  /**
   * The last this many exchanges are never omitted.
   * Bounds: 0–100.
   * @default 2
   */
  keepRecentExchanges: int(0, 100),
  /**
   * An exchange is omitted when P(still relevant) is below this.
   * Bounds: 0–1.
   * @default 0.2
   */
  exchangeOmitThreshold: prob,
  /**
   * An omitted exchange leaves in place its messages holding the latest view of a file (a read, edit or
   * write of a file nothing has viewed since) with their results; `false`: omit it whole. Off by default:
   * it lowers the share of needed removals but costs about a third of the saving (docs/replay.md).
   * @default false
   */
  exchangeKeepsLatestViews: z.boolean(),
  /**
   * At run end, omit exchanges only when the saving pays for the cache rewrite; `false`: always.
   * @default true
   */
  exchangeBreakEven: z.boolean(),
  /**
   * Least characters the exchanges omitted together must save when they cost a cache rewrite.
   * Bounds: 0–10000000.
   * @default 8000
   */
  exchangeMinSavingChars: int(0, 10_000_000),
  /**
   * Rules that keep an item whatever the classifier says (`editing`, `instructions`, `continues`,
   * `shared-names`); none by default, since none lowered the harmful-removal rate on held-out sessions.
   * @default []
   */
  keepRules: z.array(z.enum(KEEP_RULES)),
  /**
   * Checkpoints inside long runs, at `turn_end`.
   * @default true
   */
  midRun: z.boolean(),
  /**
   * An output is judged mid-run once it is this many turns old.
   * Bounds: 1–100.
   * @default 4
   */
  midRunMinAgeTurns: int(1, 100),
  /**
   * A checkpoint runs only when its eligible items add up to this many characters.
   * Bounds: 0–100000000.
   * @default 100000
   */
  midRunBatchChars: int(0, 100_000_000),
  /**
   * `midRunBatchChars` for OpenAI Codex models.
   * Bounds: 0–100000000.
   * @default 100000
   */
  midRunBatchCharsOpenAI: int(0, 100_000_000),
  /**
   * `chunkKeepThreshold` at checkpoints.
   * Bounds: 0–1.
   * @default 0.6
   */
  midRunChunkKeepThreshold: prob,
  /**
   * Checkpoints may omit old exchanges too; `false`: only run ends do, once the run's answer is known.
   * @default true
   */
  midRunExchanges: z.boolean(),
  /**
   * A checkpoint edits only when its cache rewrite likely pays off.
   * @default true
   */
  midRunBreakEven: z.boolean(),
  /**
   * Await checkpoints at their `turn_end` (else they land at a later one).
   * @default false
   */
  midRunWait: z.boolean(),
  /**
   * Longest wait at run end, in milliseconds; the rest of the pass lands at the next boundary.
   * Bounds: 0–600000.
   * @default 150
   */
  settleBudgetMs: int(0, 600_000),
  /**
   * How surely an edit must pay for its cache rewrite: the saving must exceed the rewrite this many times.
   * Bounds: 0–100.
   * @default 2
   */
  breakEvenMargin: z.number().min(0).max(100),
  /**
   * Anthropic cache breakpoints around the guard's edits.
   * @default true
   */
  pinAnthropicCache: z.boolean(),
  /**
   * Load the skills a prompt needs and leave the rest out of the catalog.
   * @default true
   */
  routeSkills: z.boolean(),
  /**
   * A skill is loaded (a namespace surfaced) when P(needed) reaches this.
   * Bounds: 0–1.
   * @default 0.6
   */
  loadThreshold: prob,
  /**
   * Most skills loaded at one prompt.
   * Bounds: 0–50.
   * @default 3
   */
  topK: int(0, 50),
  /**
   * What routing loaded is judged again every this many prompts; `0`: never.
   * Bounds: 0–1000.
   * @default 5
   */
  decayIntervalTurns: int(0, 1000),
  /**
   * At such a re-check, what scores below this is dropped.
   * Bounds: 0–1.
   * @default 0.25
   */
  decayThreshold: prob,
  /**
   * How long a prompt waits for routing, in milliseconds; later answers apply at the next prompt.
   * Bounds: 50–60000.
   * @default 1500
   */
  routingTimeoutMs: int(50, 60_000),
  /**
   * Groups of peripheral tools surfaced by score: `{ name: { prefix?, tools?, description? } }`; a name uses letters, digits, `_ . -` (at most 64), a namespace needs a prefix or a tools list.
   * @default {}
   */
  toolNamespaces: z.record(namespaceName, toolNamespace),
  /**
   * Tools surfacing never hides, besides read, write, edit, bash, grep, find, ls and recall.
   * @default ["read", "write", "edit", "bash", "grep", "find", "ls", "recall"]
   */
  coreTools: z.array(z.string().min(1)),
  /**
   * Write decision telemetry (names, numbers and ids only; file mode 0600).
   * @default true
   */
  telemetry: z.boolean(),
  /**
   * The telemetry file; `""`: `<agentDir>/context-guard-telemetry.jsonl`.
   * @default ""
   */
  telemetryPath: z.string(),
} as const;

export type GuardConfig = { [K in keyof typeof CONFIG_SCHEMA]: z.infer<(typeof CONFIG_SCHEMA)[K]> };

export const DEFAULT_CONFIG: Readonly<GuardConfig> = Object.freeze({
  enabled: true,
  model: "openrouter/~typesafe/jev-latest",
  minResultChars: 4000,
  minRunChars: 8000,
  keepWholeThreshold: 0.7,
  focusWholeThreshold: 0.6,
  chunkKeepThreshold: 0.6,
  noneThreshold: 0.5,
  maxKeepRatio: 0.6,
  keepCitedFiles: false,
  timeoutMs: 8000,
  concurrency: 6,
  maxSegmentChars: 32_000,
  maxChunksPerSegment: 40,
  excludeTools: ["edit", "write"],
  keepReads: true,
  distillErrors: true,
  historyExchanges: 3,
  recallTimeoutMs: 1000,
  imageKeepTurns: 3,
  smallResultMinChars: 400,
  smallKeepThreshold: 0.35,
  pruneExchanges: true,
  keepRecentExchanges: 2,
  exchangeOmitThreshold: 0.2,
  exchangeKeepsLatestViews: false,
  exchangeBreakEven: true,
  exchangeMinSavingChars: 8000,
  keepRules: [...DEFAULT_KEEP_RULES],
  midRun: true,
  midRunMinAgeTurns: 4,
  midRunBatchChars: 100_000,
  midRunBatchCharsOpenAI: 100_000,
  midRunChunkKeepThreshold: 0.6,
  midRunExchanges: true,
  midRunBreakEven: true,
  midRunWait: false,
  settleBudgetMs: 150,
  breakEvenMargin: 2,
  pinAnthropicCache: true,
  routeSkills: true,
  loadThreshold: 0.6,
  topK: 3,
  decayIntervalTurns: 5,
  decayThreshold: 0.25,
  routingTimeoutMs: 1500,
  toolNamespaces: {},
  coreTools: ["read", "write", "edit", "bash", "grep", "find", "ls", "recall"],
  telemetry: true,
  /** Empty: `<agentDir>/context-guard-telemetry.jsonl`. */
  telemetryPath: "",
});

export const CONFIG_KEYS = Object.keys(CONFIG_SCHEMA) as Array<keyof GuardConfig>;

export interface NormalizedConfig {
  config: GuardConfig;
  warnings: string[];
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "object") return "an object";
  return String(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Keeps the valid namespaces of `toolNamespaces`; each invalid one is dropped with a warning. */
function validNamespaces(raw: Record<string, unknown>, warnings: string[]): GuardConfig["toolNamespaces"] {
  const out: Array<[string, z.infer<typeof toolNamespace>]> = [];
  for (const [name, value] of Object.entries(raw)) {
    // `__proto__` would name the object's prototype, not a namespace, wherever it is assigned.
    const nameOk = name === "__proto__" ? undefined : namespaceName.safeParse(name);
    const parsed = toolNamespace.safeParse(value);
    if (nameOk?.success && parsed.success) out.push([name, parsed.data]);
    else {
      const issue =
        (nameOk === undefined
          ? "a reserved name"
          : nameOk.success
            ? parsed.error?.issues[0]?.message
            : nameOk.error.issues[0]?.message) ?? "invalid";
      warnings.push(`toolNamespaces.${name}: not valid (${issue}); this namespace is dropped`);
    }
  }
  return Object.fromEntries(out);
}

/**
 * Validate a parsed settings object. Missing keys take their default silently; a wrong-typed or
 * out-of-range value takes its default with a warning; unknown keys are ignored with a warning.
 */
export function normalizeConfig(raw: unknown): NormalizedConfig {
  const warnings: string[] = [];
  const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools] };
  if (raw === undefined || raw === null) return { config, warnings };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    warnings.push(`settings must be a JSON object, got ${describe(raw)}; using the defaults`);
    return { config, warnings };
  }
  const input = raw as Record<string, unknown>;
  // Own properties only: `constructor`, `toString`, `__proto__`… are keys like any other here.
  for (const key of CONFIG_KEYS) {
    if (!Object.hasOwn(input, key) || input[key] === undefined) continue;
    if (key === "toolNamespaces" && isPlainObject(input[key])) {
      // One namespace at a time: a bad one costs only itself, and none is dropped without a warning.
      (config as Record<string, unknown>)[key] = validNamespaces(input[key], warnings);
      continue;
    }
    const parsed = CONFIG_SCHEMA[key].safeParse(input[key]);
    if (parsed.success) {
      (config as Record<string, unknown>)[key] = parsed.data;
    } else {
      const issue = parsed.error.issues[0]?.message ?? "invalid";
      warnings.push(
        `${key}: ${describe(input[key])} is not valid (${issue}); using the default ${JSON.stringify(DEFAULT_CONFIG[key])}`,
      );
    }
  }
  for (const key of Object.keys(input)) {
    if (Object.hasOwn(CONFIG_SCHEMA, key)) continue;
    const hint = nearest(key, Object.keys(CONFIG_SCHEMA));
    warnings.push(`${key}: unknown setting, ignored${hint ? ` (did you mean "${hint}"?)` : ""}`);
  }
  return { config, warnings };
}
