// Small text helpers shared by the pure modules.

/**
 * Clip text to at most `max` characters, keeping the head (70%) and the tail with a `[…]` line between.
 * Text within the limit is returned unchanged.
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 8) return text.slice(0, max);
  const marker = "\n[…]\n";
  const room = max - marker.length;
  const head = Math.ceil(room * 0.7);
  const tail = room - head;
  return `${text.slice(0, head)}${marker}${tail > 0 ? text.slice(text.length - tail) : ""}`;
}

/** Keep the end of the text (for notes that matter most when recent). */
export function clipStart(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = "[…]\n";
  return `${marker}${text.slice(text.length - Math.max(0, max - marker.length))}`;
}

/** `1234` → `1.2k`, `950` → `950`, `36100` → `36.1k`, `1500000` → `1.5M`. */
export function formatCount(n: number): string {
  const abs = Math.abs(n);
  if (abs < 1000) return String(Math.round(n));
  if (abs < 1_000_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  return `${(n / 1_000_000).toFixed(1).replace(/\.0$/, "")}M`;
}

/** A replacement's size in the one wording the header, `/guard` and the footer share: `51.2k → 1.8k chars`. */
export function sizeChange(before: number, after: number): string {
  return `${formatCount(before)} → ${formatCount(after)} chars`;
}

/** Number of lines in a text (a trailing newline does not start a new line). */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 1;
  let i = text.indexOf("\n");
  while (i !== -1) {
    if (i < text.length - 1) n++;
    i = text.indexOf("\n", i + 1);
  }
  return n;
}

/**
 * One-line form for labels and traces: whitespace runs become one space, and text longer than `max`
 * is cut with a trailing `…` (so the result never exceeds `max` characters).
 */
export function oneLine(text: string, max: number): string {
  // Word by word, stopping once the line is known to be too long: labels are taken from prompts and
  // arguments that can be very long, and only their first `max` characters are ever shown.
  const words = /\S+/g;
  let flat = "";
  for (let m = words.exec(text); m; m = words.exec(text)) {
    flat = flat ? `${flat} ${m[0]}` : m[0];
    if (flat.length > max) return `${flat.slice(0, Math.max(0, max - 1))}…`;
  }
  return flat;
}

/** `1 item`, `2 items`; `plural` for words that do not just take an s (`entry`, `entries`). */
export function count(n: number, word: string, plural = `${word}s`): string {
  return `${formatCount(n)} ${n === 1 ? word : plural}`;
}
