// Settings a process can take from its environment when the settings file leaves them out: a `pi -p`
// script (or a test) chooses whether the run end finishes its pass before exit.
import { CONFIG_SCHEMA, type NormalizedConfig } from "../../core/shared/config.ts";

const SETTLE_BUDGET_ENV = "PI_CONTEXT_GUARD_SETTLE_BUDGET_MS";

/** Applies `PI_CONTEXT_GUARD_SETTLE_BUDGET_MS` unless the file set `settleBudgetMs`; a bad value warns. */
export function applyEnvDefaults(
  normalized: NormalizedConfig,
  raw: unknown,
  env: NodeJS.ProcessEnv = process.env,
): NormalizedConfig {
  const text = env[SETTLE_BUDGET_ENV];
  if (text === undefined || text === "") return normalized;
  if (typeof raw === "object" && raw !== null && Object.hasOwn(raw, "settleBudgetMs")) return normalized;
  const parsed = CONFIG_SCHEMA.settleBudgetMs.safeParse(Number(text));
  if (!parsed.success) {
    const shown = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
    return {
      config: normalized.config,
      warnings: [
        ...normalized.warnings,
        `${SETTLE_BUDGET_ENV}: ${shown} is not valid (an integer from 0 to 600000); using ${normalized.config.settleBudgetMs}`,
      ],
    };
  }
  return { config: { ...normalized.config, settleBudgetMs: parsed.data }, warnings: normalized.warnings };
}
