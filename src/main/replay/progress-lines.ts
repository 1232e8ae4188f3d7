// Progress of a long replay where no progress bar can be drawn (stderr is a file or a pipe): a plain
// line now and then, only for a session long enough to take minutes, so short replays stay silent. The
// time left is read from the pace since the previous line: an entry costs more as a session without
// compaction grows, so the pace of the whole replay so far would promise too little.
import { escapeControls } from "../../core/shared/control-chars.ts";

/** Sessions with fewer entries replay in seconds: no progress lines. */
const LARGE_SESSION_ENTRIES = 20_000;
const EVERY_MS = 30_000;

export class ProgressLines {
  #stream: NodeJS.WritableStream;
  #now: () => number;
  #started: number;
  #last: number;
  #lastDone = 0;
  #minEntries: number;
  #everyMs: number;

  constructor(
    stream: NodeJS.WritableStream,
    options: { minEntries?: number; everyMs?: number; now?: () => number } = {},
  ) {
    this.#stream = stream;
    this.#minEntries = options.minEntries ?? LARGE_SESSION_ENTRIES;
    this.#everyMs = options.everyMs ?? EVERY_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#started = this.#now();
    this.#last = this.#started;
  }

  update(label: string, done: number, total: number, unit = ""): void {
    if (total < this.#minEntries) return;
    const now = this.#now();
    if (done === 1) {
      this.#started = now;
      this.#last = now;
      this.#lastDone = 0;
    }
    if (done < total && now - this.#last < this.#everyMs) return;
    const msPerEntry = done > this.#lastDone ? (now - this.#last) / (done - this.#lastDone) : 0;
    this.#last = now;
    this.#lastDone = done;
    const minutes = ((now - this.#started) / 60_000).toFixed(1);
    const pct = Math.floor((done / total) * 100);
    const left =
      done < total && msPerEntry > 0 ? `, about ${(((total - done) * msPerEntry) / 60_000).toFixed(1)} min left` : "";
    this.#stream.write(
      `context-guard: ${escapeControls(label)} ${done}/${total} ${unit} (${pct}%) after ${minutes} min${left}\n`,
    );
  }

  clear(): void {}
}
