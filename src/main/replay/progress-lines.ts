// Progress of a long replay where no progress bar can be drawn (stderr is a file or a pipe): a plain
// line now and then, only for a session long enough to take minutes, so short replays stay silent.
import { escapeControls } from "../../core/shared/control-chars.ts";

/** Sessions with fewer entries replay in seconds: no progress lines. */
const LARGE_SESSION_ENTRIES = 20_000;
const EVERY_MS = 30_000;

export class ProgressLines {
  #stream: NodeJS.WritableStream;
  #started = performance.now();
  #last = performance.now();
  #minEntries: number;
  #everyMs: number;

  constructor(stream: NodeJS.WritableStream, options: { minEntries?: number; everyMs?: number } = {}) {
    this.#stream = stream;
    this.#minEntries = options.minEntries ?? LARGE_SESSION_ENTRIES;
    this.#everyMs = options.everyMs ?? EVERY_MS;
  }

  update(label: string, done: number, total: number, unit = ""): void {
    if (total < this.#minEntries) return;
    const now = performance.now();
    if (done === 1) this.#started = now;
    if (done < total && now - this.#last < this.#everyMs) return;
    this.#last = now;
    const minutes = ((now - this.#started) / 60_000).toFixed(1);
    const pct = Math.floor((done / total) * 100);
    this.#stream.write(
      `context-guard: ${escapeControls(label)} ${done}/${total} ${unit} (${pct}%) after ${minutes} min\n`,
    );
  }

  clear(): void {}
}
