/**
 * What a person labelling removals by hand needs to read (test/fixtures/labelled-removals.md): for each
 * drawn removal (bench/draw-removals.ts --out; or a labelled set, to read its labels again), the removed text, the key facts its stub lists today, its
 * distinctive tokens that nothing left in view shows, every later message that names one of them (user,
 * agent text, call arguments, tool results: a tool result showing it again first means the agent had it
 * anyway) up to a compaction that drops it, the agent's next message when the run goes on, and the next
 * prompt and its answer.
 *
 *   node bench/label-context.ts --drawn FILE [--session PART] [--from N] [--to N] [--text 1500]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { droppedAt } from "../src/core/replay/proxy.ts";
import { proxyTokens } from "../src/core/replay/proxy-tokens.ts";
import { readContent } from "../src/main/pass/snapshot.ts";
import { around, compactionsOf, excerpt, laterMessages } from "../src/main/replay/proxy-input.ts";
import { readSessionFile, type SessionFile } from "../src/main/replay/reader.ts";
import { type LabelledRemoval, pieceFor, sessionPath } from "../test/kit/labelled-removals.ts";
import { stubFacts } from "./lib/stub-facts.ts";

const { values } = parseArgs({
  options: {
    drawn: { type: "string" },
    session: { type: "string" },
    from: { type: "string", default: "0" },
    to: { type: "string" },
    text: { type: "string", default: "1500" },
    matches: { type: "string", default: "12" },
  },
});
if (values.drawn === undefined)
  throw new Error("--drawn FILE (the output of bench/draw-removals.ts, or a labelled set) is required");

const input = JSON.parse(readFileSync(values.drawn, "utf8")) as {
  drawn?: LabelledRemoval[];
  removals?: LabelledRemoval[];
};
const drawn = input.drawn ?? input.removals ?? [];
const textMax = Number(values.text);
const maxMatches = Number(values.matches);
const files = new Map<string, SessionFile>();

function lineOf(file: SessionFile, index: number): number {
  return file.lineOf.get(file.branch[index] as SessionEntry) ?? 0;
}

for (let i = Number(values.from); i < Math.min(drawn.length, Number(values.to ?? drawn.length)); i++) {
  const r = drawn[i] as LabelledRemoval & { flagged?: boolean };
  if (values.session !== undefined && !r.session.includes(values.session)) continue;
  let file = files.get(r.session);
  if (file === undefined) {
    file = await readSessionFile(sessionPath(r.session));
    files.set(r.session, file);
  }
  const piece = pieceFor(file, r);
  const entry = piece.at === undefined ? undefined : (file.branch[piece.at] as SessionEntry);
  const original =
    entry?.type === "message" ? readContent((entry.message as { content?: unknown }).content).text : undefined;
  const facts = stubFacts(piece, r, original);
  const tokens = [...proxyTokens(piece.text).keys()].filter((t) => !piece.visible.has(t));
  console.log(`\n=== #${i} ${r.session} line ${r.line} (${r.kind ?? "output"}), gone after line ${r.afterLine}`);
  console.log(`what: ${r.what}`);
  // A drawn removal carries the proxy's flag; a labelled one, the flag of the proxy of its draw.
  console.log(`proxy flags it likely needed: ${r.flagged ?? r.suspectToday}; removed ${piece.text.length} chars`);
  console.log(`stub lists: ${facts.length > 0 ? facts.join(" · ") : "(no facts)"}`);
  console.log(`tokens no longer in view (${tokens.length}): ${tokens.slice(0, 40).join(" · ")}`);
  console.log(`--- removed text\n${excerpt(piece.text, textMax)}`);
  console.log("--- later messages naming those tokens");
  // A compaction that summarised the piece away ends what the removal could change.
  const dropped = droppedAt(piece, compactionsOf(file.branch));
  const later = laterMessages(file.branch).filter((m) => m.index > piece.after && m.index < dropped);
  if (Number.isFinite(dropped))
    console.log(`  (a compaction at line ${lineOf(file, dropped)} drops it: nothing after counts)`);
  let shown = 0;
  for (const m of later) {
    const texts = [m.text, ...m.calls.map((c) => `${c.text}${c.fresh ? `\n[writes] ${c.fresh}` : ""}`)].join("\n");
    const hits = tokens.filter((t) => texts.includes(t));
    if (hits.length === 0) continue;
    console.log(
      `  line ${lineOf(file, m.index)} ${m.role} [${hits.slice(0, 6).join(", ")}]: ${around(texts, hits[0], 360)}`,
    );
    if (++shown >= maxMatches) {
      console.log("  … more");
      break;
    }
  }
  if (shown === 0) console.log("  (none)");
  // A removal at a checkpoint lands mid-run: the agent's next message belongs to the same run.
  const next = later.find((m) => m.role === "assistant" && m.text.trim() !== "");
  const prompt = later.find((m) => m.role === "user");
  if (next && (prompt === undefined || next.index < prompt.index))
    console.log(`--- the agent's next message, same run: line ${lineOf(file, next.index)}: ${excerpt(next.text, 400)}`);
  const answer = prompt && later.find((m) => m.role === "assistant" && m.index > prompt.index && m.text.trim() !== "");
  console.log(
    `--- next prompt: ${prompt ? `line ${lineOf(file, prompt.index)}: ${excerpt(prompt.text, 400)}` : "(none)"}`,
  );
  if (answer) console.log(`--- its first answer: line ${lineOf(file, answer.index)}: ${excerpt(answer.text, 400)}`);
}
