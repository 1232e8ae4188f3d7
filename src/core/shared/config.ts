import { z } from "zod";
import { DEFAULT_KEEP_RULES, KEEP_RULES } from "../items/keep-rule-names.ts";
import { nearest } from "./nearest.ts";

// Each key is validated on its own so one bad value costs only that key: it falls back to its default
// and produces a warning that names it.

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
  enabled: z.boolean(),
  model: z.string().regex(/^[^/\s]+\/\S+$/, "expected provider/id"),
  minResultChars: int(1, 10_000_000),
  minRunChars: int(0, 100_000_000),
  keepWholeThreshold: prob,
  focusWholeThreshold: prob,
  chunkKeepThreshold: prob,
  noneThreshold: prob,
  maxKeepRatio: prob,
  keepCitedFiles: z.boolean(),
  timeoutMs: int(100, 600_000),
  concurrency: int(1, 64),
  maxSegmentChars: int(1_000, 1_000_000),
  maxChunksPerSegment: int(1, 200),
  excludeTools: z.array(z.string()),
  distillErrors: z.boolean(),
  historyExchanges: int(0, 10),
  recallTimeoutMs: int(50, 60_000),
  imageKeepTurns: int(1, 1000),
  smallResultMinChars: int(0, 1_000_000),
  smallKeepThreshold: prob,
  pruneExchanges: z.boolean(),
  keepRecentExchanges: int(0, 100),
  exchangeOmitThreshold: prob,
  exchangeBreakEven: z.boolean(),
  exchangeMinSavingChars: int(0, 10_000_000),
  keepRules: z.array(z.enum(KEEP_RULES)),
  midRun: z.boolean(),
  midRunMinAgeTurns: int(1, 100),
  midRunBatchChars: int(0, 100_000_000),
  midRunBatchCharsOpenAI: int(0, 100_000_000),
  midRunChunkKeepThreshold: prob,
  midRunBreakEven: z.boolean(),
  midRunWait: z.boolean(),
  settleBudgetMs: int(0, 600_000),
  breakEvenMargin: z.number().min(0).max(100),
  pinAnthropicCache: z.boolean(),
  routeSkills: z.boolean(),
  loadThreshold: prob,
  topK: int(0, 50),
  decayIntervalTurns: int(0, 1000),
  decayThreshold: prob,
  routingTimeoutMs: int(50, 60_000),
  toolNamespaces: z.record(namespaceName, toolNamespace),
  coreTools: z.array(z.string().min(1)),
  telemetry: z.boolean(),
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
  distillErrors: true,
  historyExchanges: 3,
  recallTimeoutMs: 1000,
  imageKeepTurns: 3,
  smallResultMinChars: 400,
  smallKeepThreshold: 0.45,
  pruneExchanges: true,
  keepRecentExchanges: 2,
  exchangeOmitThreshold: 0.2,
  exchangeBreakEven: true,
  exchangeMinSavingChars: 8000,
  keepRules: [...DEFAULT_KEEP_RULES],
  midRun: true,
  midRunMinAgeTurns: 4,
  midRunBatchChars: 100_000,
  midRunBatchCharsOpenAI: 100_000,
  midRunChunkKeepThreshold: 0.6,
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

export interface ModelRef {
  provider: string;
  id: string;
}

/** Split `provider/id` at the first slash: `openrouter/~typesafe/jev-latest` → openrouter + ~typesafe/jev-latest. */
export function parseModelRef(ref: string): ModelRef | undefined {
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) return undefined;
  const provider = ref.slice(0, slash).trim();
  const id = ref.slice(slash + 1).trim();
  if (!provider || !id) return undefined;
  return { provider, id };
}
