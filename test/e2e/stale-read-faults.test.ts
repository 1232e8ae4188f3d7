// The stale-read check against files that are not what they were, in the real Pi: run 1 reads ordinary
// files; between the runs each is swapped for something a check must not read (a symlink to
// /proc/self/pagemap, which stat calls an empty regular file and which reads the address space, a /proc
// file, /dev/zero, a FIFO, a 2 GB sparse file, a directory, a symlink loop, mode 000) or deleted; run 2 must
// settle with bounded memory, stub only the deleted file's read and keep the rest. Reads through a
// `file://` URL, a name with a no-break space and offset 2.5, whose files nobody touched, are never
// stubbed either.
import { execFileSync } from "node:child_process";
import { chmod, mkdir, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultSession, faultSession } from "../kit/fault-session.ts";
import { type AnswerPolicy, keywordPolicy, stateObject, type WireAnswer } from "../kit/loopback-classifier.ts";

/** Every output is needed unless it is marked superseded: only the disk check can stub a read. */
const keepPolicy: AnswerPolicy = (body) => {
  const out: Record<string, WireAnswer> = { ...keywordPolicy(/./)(body) };
  const items = (stateObject(body).items ?? {}) as Record<string, { superseded?: string }>;
  for (const id of Object.keys(body.questions))
    if (id.startsWith("item_")) out[id] = { type: "noul", noul: items[id]?.superseded ? 0.05 : 0.9 };
  return out;
};

const lines = (word: string) => Array.from({ length: 40 }, (_, i) => `export const ${word}${i} = ${i};`).join("\n");

/** Swapped between the runs: the name and what it becomes. */
const SWAPPED: Record<string, (file: string) => Promise<void>> = {
  "pagemap.ts": (f) => rm(f).then(() => symlink("/proc/self/pagemap", f)),
  "status.ts": (f) => rm(f).then(() => symlink("/proc/self/status", f)),
  "zero.ts": (f) => rm(f).then(() => symlink("/dev/zero", f)),
  "fifo.ts": async (f) => {
    await rm(f);
    execFileSync("mkfifo", [f]);
  },
  "sparse.ts": (f) => truncate(f, 2 * 1024 ** 3),
  "dir.ts": (f) => rm(f).then(() => mkdir(f)),
  "loop.ts": (f) => rm(f).then(() => symlink(f, f)),
  "locked.ts": (f) => chmod(f, 0o000),
  "deleted.ts": (f) => rm(f),
};

/** Pi reads `no break.ts` (a plain space) for this name. */
const NBSP_NAME = "no\u00A0break.ts";
const untouched = (cwd: string): Array<Record<string, string | number>> => [
  { path: pathToFileURL(join(cwd, "src/url.ts")).href },
  { path: `src/${NBSP_NAME}` },
  { path: "src/offset.ts", offset: 2.5 },
];

let s: FaultSession;
let peakRss = 0;
let rssBefore = 0;

beforeAll(async () => {
  const names = [...Object.keys(SWAPPED), "url.ts", "offset.ts"];
  s = await faultSession({
    config: { pruneExchanges: false, midRun: false, exchangeBreakEven: false, keepReads: false },
    policy: keepPolicy,
    responses: [
      { toolCalls: names.filter((n) => n in SWAPPED).map((n) => ({ name: "read", arguments: { path: `src/${n}` } })) },
      "Read them.",
      () => ({ toolCalls: untouched(s.cwd).map((args) => ({ name: "read", arguments: args })) }),
      "Read those too.",
      "Noted.",
      "Still noted.",
    ],
  });
  await mkdir(join(s.cwd, "src"));
  for (const name of [...names, "no break.ts"]) await writeFile(join(s.cwd, "src", name), lines(name.slice(0, 3)));
  await s.session.prompt("Read the sources.");
  await s.session.prompt("Read the others.");
  for (const [name, swap] of Object.entries(SWAPPED)) await swap(join(s.cwd, "src", name));
  rssBefore = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);
  try {
    await s.session.prompt("Anything new?");
    await s.session.prompt("And now?");
  } finally {
    clearInterval(timer);
  }
});
afterAll(async () => {
  await chmod(join(s.cwd, "src/locked.ts"), 0o644).catch(() => {});
  await rm(join(s.cwd, "src/dir.ts"), { recursive: true, force: true });
  await s?.close();
});

function outcomesOf(path: string): string[] {
  return s
    .records()
    .flatMap((r) => r.results.filter((x) => x.label === `read ${path}`))
    .map((x) => `${x.outcome}:${x.reason}`);
}

describe("stale-read checks on special and swapped files", () => {
  it("settles without reading the address space", () => {
    // A bound on growth, not on time: the unbounded read grew by gigabytes.
    expect(peakRss - rssBefore).toBeLessThan(512 * 1024 ** 2);
  });

  it("stubs the read of the deleted file as changed on disk", () => {
    expect(outcomesOf("src/deleted.ts")).toContain("removed:changed-on-disk");
  });

  it("judges no other swapped file changed on disk", () => {
    for (const name of Object.keys(SWAPPED).filter((n) => n !== "deleted.ts"))
      expect([name, outcomesOf(`src/${name}`).filter((o) => o.endsWith("changed-on-disk"))]).toEqual([name, []]);
  });

  it("keeps untouched reads through a file URL, a no-break space and offset 2.5", () => {
    const results = s.records().flatMap((r) => r.results);
    for (const file of ["url.ts", "break.ts", "offset.ts"]) {
      const outcomes = results.filter((x) => x.label.includes(file)).map((x) => `${x.outcome}:${x.reason}`);
      // Judged at each run end after the read and kept: the classifier keeps everything not marked stale.
      expect([file, outcomes.length > 0, outcomes.filter((o) => !o.startsWith("kept"))]).toEqual([file, true, []]);
    }
  });
});
