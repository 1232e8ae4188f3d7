// The keep rules' names, apart from the rules themselves so the config can list them without importing
// what the rules import (keep-rules.ts).

/**
 * editing: a read of a file the run edits, or names as its next step; instructions: a skill, agents
 * file, task list or spec the work follows; continues: the run's outputs when its answer proposes next
 * steps or the next prompt says to go on; shared-names: an old exchange whose paths or identifiers the
 * current run uses.
 */
export const KEEP_RULES = ["editing", "instructions", "continues", "shared-names"] as const;
export type KeepRule = (typeof KEEP_RULES)[number];

/**
 * The rules on by default: none. On the labelled set's held-out half no rule kept needed items at a
 * higher rate than the removals hold them, so none lowers the harmful rate yet (docs/replay.md, "Rules
 * that keep what the work needs"); each can be turned on with `keepRules`.
 */
export const DEFAULT_KEEP_RULES: readonly KeepRule[] = [];
