/**
 * What stubs that carry their key facts cost and save on the real sessions: the replay (local/lexical,
 * default settings, the prompt cache modelled) of the test fixtures' three sessions and every session in
 * ../shared/sessions, per session: the main model's dollars off and on, the classifier's, the removed
 * items the needed-later proxy finds likely needed (the stubs count as visible: an item whose used tokens
 * are all in its stub is not one), and what their recalls would cost. Run it on two checkouts (with and
 * without the facts) and compare; `--json` prints the rows for that.
 *
 *   node bench/stub-facts.ts [--json] [--only <part of a file name>]
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";

const { values } = parseArgs({ options: { json: { type: "boolean", default: false }, only: { type: "string" } } });
const REPO = resolve(import.meta.dirname, "..");
const paths = replaySessionPaths(
  ["../shared/sessions", "/work/shared/sessions"].map((p) => resolve(REPO, p)).find(existsSync),
);

interface Row {
  name: string;
  off: number;
  on: number;
  removed: number;
  likely: number;
  recalls: number;
}

if (values.only !== undefined) {
  const only = values.only;
  paths.splice(0, paths.length, ...paths.filter((p) => p.includes(only)));
}

const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools] };
const rows: Row[] = [];
for (const path of paths) {
  const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
  const { report } = await replayFiles([path], { classifier, config, runner });
  const s = report.sessions[0];
  const d = s?.dollars;
  const row: Row = {
    name: path.split("/").at(-1) as string,
    off: d?.off ?? 0,
    on: (d?.on ?? 0) + (d?.classifier ?? 0),
    removed: s?.harm?.removedItems ?? 0,
    likely: s?.harm?.items ?? 0,
    recalls: s?.harm?.dollars ?? 0,
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}
if (values.json) console.log(JSON.stringify(rows));
else {
  const sum = (f: (r: Row) => number) => rows.reduce((n, r) => n + f(r), 0);
  console.log(
    [
      `Replay, local/lexical, default settings, ${new Date().toISOString()}.`,
      "",
      "| Session | Off | On | Likely needed | Recalls | Saved after recalls |",
      "|---|---:|---:|---:|---:|---:|",
      ...[
        ...rows,
        {
          name: "**all**",
          off: sum((r) => r.off),
          on: sum((r) => r.on),
          removed: sum((r) => r.removed),
          likely: sum((r) => r.likely),
          recalls: sum((r) => r.recalls),
        },
      ].map(
        (r) =>
          `| ${r.name} | $${r.off.toFixed(2)} | $${r.on.toFixed(2)} | ${r.likely} of ${r.removed} | $${r.recalls.toFixed(2)} | $${(r.off - r.on - r.recalls).toFixed(2)} |`,
      ),
    ].join("\n"),
  );
}
await runner.destroy();
process.exit(0);
