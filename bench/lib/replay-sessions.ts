/**
 * The session files the replay benchmarks read: the committed fixtures first, then every other session file
 * of a shared folder (by name) when one is given and present.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");
const FIXTURES = [
  "badlogic__pi-mono__large-session.jsonl",
  "castai__kimchi-dev__session.jsonl",
  "rycerzes__trl__session.jsonl",
];

export function replaySessionPaths(sharedDir?: string): string[] {
  const paths = FIXTURES.map((f) => join(REPO, "test/fixtures/sessions", f));
  if (sharedDir !== undefined && existsSync(sharedDir)) {
    for (const f of readdirSync(sharedDir).sort())
      if (f.endsWith(".jsonl") && !FIXTURES.includes(f)) paths.push(join(sharedDir, f));
  }
  return paths;
}
