/**
 * How long key-fact extraction (src/core/shared/key-facts.ts) takes on real tool outputs: every tool
 * result of the two OpenClaw sessions with the most output text, three rounds, and the largest alone.
 *
 *   node bench/key-facts-speed.ts
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { keyFacts } from "../src/core/shared/key-facts.ts";
import { SHARED_SESSIONS } from "../test/kit/labelled-removals.ts";

if (SHARED_SESSIONS === undefined) throw new Error("no shared sessions folder");
const texts: string[] = [];
for (const name of ["Musk-fanX__openclaw-backup__d27ecd5a.jsonl", "abhishekibr2__openclaw__21f06459.jsonl"]) {
  for (const line of readFileSync(join(SHARED_SESSIONS, name), "utf8").split("\n")) {
    if (!line) continue;
    const m = (JSON.parse(line) as { message?: { role?: string; content?: unknown } }).message;
    if (m?.role !== "toolResult" || !Array.isArray(m.content)) continue;
    texts.push((m.content as Array<{ type: string; text?: string }>).map((b) => b.text ?? "").join("\n"));
  }
}
const total = texts.reduce((n, t) => n + t.length, 0);
for (let round = 1; round <= 3; round++) {
  const t0 = performance.now();
  for (const t of texts) keyFacts([t], { maxChars: 300 });
  const ms = performance.now() - t0;
  console.log(
    `round ${round}: ${texts.length} outputs, ${(total / 1e6).toFixed(2)}M chars, ${ms.toFixed(0)} ms (${(ms / (total / 1e6)).toFixed(0)} ms per M chars)`,
  );
}
const largest = texts.reduce((a, b) => (b.length > a.length ? b : a), "");
const t0 = performance.now();
keyFacts([largest], { maxChars: 300 });
console.log(`largest output, ${largest.length} chars: ${(performance.now() - t0).toFixed(1)} ms`);
