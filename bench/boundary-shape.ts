/**
 * What the shape check costs Pi's thread: the final check of a boundary's draft list (settleBoundary: an
 * exchange omission, a restore of one of its results, a distillation) and the per-request filter of
 * Pi's `context` event (withoutOrphans), on sessions of growing size built in a real SessionManager.
 * Reports the median of `--reps` calls, and that median per 1,000 context entries. Not part of the suite.
 *
 *   npm exec -- node bench/boundary-shape.ts [--reps 30]
 */
import { parseArgs } from "node:util";
import type { SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import type { ProjectedLike } from "../src/main/pass/snapshot.ts";
import { settleBoundary, withoutOrphans } from "../src/main/session/boundary-shape.ts";
import { buildSession } from "../test/kit/arbitraries.ts";

const { values } = parseArgs({ options: { reps: { type: "string", default: "30" } } });
const reps = Number(values.reps);

function session(exchanges: number) {
  return buildSession({
    running: false,
    unknownEntries: false,
    exchanges: Array.from({ length: exchanges }, (_, i) => ({
      prompt: `prompt ${i}`,
      answer: `answer ${i}`,
      turns: [
        {
          text: "",
          calls: [0, 1].map((k) => ({
            tool: "bash",
            args: { command: `cat f${i}_${k}` },
            output: `out ${i} ${k}`,
            isError: false,
            images: [],
          })),
        },
      ],
    })),
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

const edit = (targetId: string, replacement: { content: unknown } | null) =>
  ({ type: "context_edit", targetId, replacement }) as SessionBoundaryDraft;

console.log("entries  settle ms  per 1k  nothing ms  per 1k  filter ms  per 1k");
for (const exchanges of [200, 1000, 4000]) {
  const sm = session(exchanges);
  const projection = sm.buildSessionProjection();
  const context = projection.entries as unknown as ProjectedLike[];
  const messages = context.filter((p) => p.sourceEntry.type === "message");
  // Exchange 1 omitted by the pass, its first result restored by the user at the same boundary.
  const prompt = messages[0]?.sourceEntry.id as string;
  const inside = messages.slice(1, 5).map((p) => p.sourceEntry.id);
  const judged = [
    edit(prompt, { content: [{ type: "text", text: "[context-guard] stub" }] }),
    ...inside.map((id) => edit(id, null)),
  ];
  const restoring = [edit(inside[1] as string, { content: [{ type: "text", text: "original" }] })];
  const last = messages.at(-2)?.sourceEntry.id as string;
  judged.push(edit(last, { content: [{ type: "text", text: "[context-guard] distilled" }] }));
  const settle: number[] = [];
  const nothing: number[] = [];
  const filter: number[] = [];
  for (let r = 0; r < reps; r++) {
    let t = performance.now();
    settleBoundary({ context, theirs: [], judged, restoring });
    settle.push(performance.now() - t);
    // A boundary with nothing to land: the branch is still checked.
    t = performance.now();
    settleBoundary({ context, theirs: [], judged: [], restoring: [] });
    nothing.push(performance.now() - t);
    t = performance.now();
    withoutOrphans(projection.messages);
    filter.push(performance.now() - t);
  }
  const n = context.length;
  const cells = [median(settle), median(nothing), median(filter)].flatMap((ms) => [
    ms.toFixed(2).padStart(9),
    ((ms * 1000) / n).toFixed(3).padStart(6),
  ]);
  console.log(`${String(n).padStart(7)}  ${cells.join("  ")}`);
}
