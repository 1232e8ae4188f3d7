// Small statistics and formatting helpers shared by the benchmark scenarios.

/** Median of the finite values (NaN when there are none). */
export function median(values: readonly number[]): number {
  const xs = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (xs.length === 0) return Number.NaN;
  const mid = xs.length >> 1;
  return xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2;
}

export function max(values: readonly number[]): number {
  const xs = values.filter(Number.isFinite);
  return xs.length === 0 ? Number.NaN : Math.max(...xs);
}

export function min(values: readonly number[]): number {
  const xs = values.filter(Number.isFinite);
  return xs.length === 0 ? Number.NaN : Math.min(...xs);
}

/** Median and maximum of a series of repetitions. */
export interface Summary {
  median: number;
  max: number;
  n: number;
}

export function summarize(values: readonly number[]): Summary {
  return { median: round(median(values)), max: round(max(values)), n: values.length };
}

/** Rounds to 2 decimals for ms-scale values (keeps JSON readable). */
export function round(x: number, digits = 2): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** `1.23` / `12.3` / `123`: about three significant digits. */
export function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return "–";
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

/** `median / max` of a summary. */
export function fmtSummary(s: Summary | undefined): string {
  if (!s) return "–";
  return `${fmt(s.median)} / ${fmt(s.max)}`;
}

export function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return "–";
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}×`;
}

export function mb(chars: number): string {
  return `${(chars / 1e6).toFixed(chars >= 1e7 ? 0 : chars >= 1e6 ? 1 : 2)} MB`;
}

/** A plain text table (stdout) and the same rows as Markdown. */
export interface Table {
  title: string;
  head: string[];
  rows: string[][];
  /** Shown under the Markdown table. */
  note?: string;
}

export function textTable(t: Table): string {
  const widths = t.head.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  return [`== ${t.title}`, line(t.head), line(widths.map((w) => "-".repeat(w))), ...t.rows.map(line)].join("\n");
}

export function markdownTable(t: Table): string {
  const esc = (s: string) => s.replaceAll("|", "\\|");
  const out = [
    `| ${t.head.map(esc).join(" | ")} |`,
    `|${t.head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
    ...t.rows.map((r) => `| ${r.map(esc).join(" | ")} |`),
  ];
  if (t.note) out.push("", t.note);
  return out.join("\n");
}

/** Rotates `items` by `k` positions: interleaves backends fairly over repetitions. */
export function rotate<T>(items: readonly T[], k: number): T[] {
  const n = items.length;
  if (n === 0) return [];
  const s = ((k % n) + n) % n;
  return [...items.slice(s), ...items.slice(0, s)];
}
