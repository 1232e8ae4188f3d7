// Each setting is documented where it is declared (a JSDoc on its schema field: meaning, bounds, default), and
// the README's configuration table lists exactly the schema's keys with the defaults the code uses. Both are
// held to CONFIG_SCHEMA and DEFAULT_CONFIG here, so neither can drift from the code.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, CONFIG_SCHEMA, DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";

const ROOT = join(import.meta.dirname, "../../../..");
const SOURCE = readFileSync(join(ROOT, "src/core/shared/config.ts"), "utf8");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The schema's numeric bounds of a key, or undefined for a key that is not a number. */
function bounds(key: keyof typeof CONFIG_SCHEMA): [number, number] | undefined {
  const s = CONFIG_SCHEMA[key] as { minValue?: number | null; maxValue?: number | null };
  return typeof s.minValue === "number" && typeof s.maxValue === "number" ? [s.minValue, s.maxValue] : undefined;
}

/** The JSDoc right above `key:` inside CONFIG_SCHEMA, without its `*` margins. */
function jsdoc(key: string): string | undefined {
  const schema = SOURCE.slice(SOURCE.indexOf("export const CONFIG_SCHEMA = {"));
  const m = new RegExp(`/\\*\\*\\n((?:\\s*\\*.*\\n)+?)\\s*\\*/\\n\\s*${key}:`).exec(schema);
  return m?.[1]
    ?.split("\n")
    .map((l) => l.replace(/^\s*\*\s?/, ""))
    .join("\n")
    .trim();
}

/** The README's configuration table: key → [default cell, meaning cell], in its order. */
function readmeTable(text: string): Array<{ key: string; fallback: string; meaning: string }> {
  const section = text.slice(text.indexOf("## Configuration"));
  const end = section.indexOf("\n## ", 3);
  const rows: Array<{ key: string; fallback: string; meaning: string }> = [];
  for (const line of (end < 0 ? section : section.slice(0, end)).split("\n")) {
    const m = /^\| `([^`]+)` \| `(.*)` \| (.*) \|$/.exec(line);
    if (m) rows.push({ key: m[1] as string, fallback: m[2] as string, meaning: m[3] as string });
  }
  return rows;
}

function problems(text: string): string[] {
  const out: string[] = [];
  const rows = readmeTable(text);
  const keys = rows.map((r) => r.key);
  const missing = CONFIG_KEYS.filter((k) => !keys.includes(k));
  const extra = keys.filter((k) => !(CONFIG_KEYS as string[]).includes(k));
  if (missing.length) out.push(`README lacks ${missing.join(", ")}`);
  if (extra.length) out.push(`README lists keys the schema does not have: ${extra.join(", ")}`);
  if (!missing.length && !extra.length && keys.join() !== CONFIG_KEYS.join())
    out.push("README lists the keys in another order than the schema");
  for (const r of rows) {
    const key = r.key as keyof typeof DEFAULT_CONFIG;
    if (!(key in DEFAULT_CONFIG)) continue;
    let value: unknown;
    try {
      value = JSON.parse(r.fallback);
    } catch {
      out.push(`${key}: README default ${r.fallback} is not JSON`);
      continue;
    }
    if (JSON.stringify(value) !== JSON.stringify(DEFAULT_CONFIG[key]))
      out.push(`${key}: README says ${r.fallback}, the code's default is ${JSON.stringify(DEFAULT_CONFIG[key])}`);
    const range = /\((\d+)–(\d+)\)/.exec(r.meaning);
    const b = bounds(key);
    if (range && (!b || Number(range[1]) !== b[0] || Number(range[2]) !== b[1]))
      out.push(`${key}: README says ${range[0]}, the schema allows ${b ? `${b[0]}–${b[1]}` : "no range"}`);
  }
  return out;
}

describe("settings documented at the schema", () => {
  it.each(CONFIG_KEYS)("%s: a meaning, its bounds and the default the code uses", (key) => {
    const doc = jsdoc(key);
    expect(doc, `no JSDoc on CONFIG_SCHEMA.${key}`).toBeDefined();
    const lines = (doc as string).split("\n");
    expect(lines[0]?.length, "the first line says what the setting does").toBeGreaterThan(10);
    const fallback = /^@default (.+)$/m.exec(doc as string)?.[1];
    expect(fallback, "an @default line").toBeDefined();
    expect(JSON.parse(fallback as string)).toEqual(DEFAULT_CONFIG[key]);
    const b = bounds(key);
    const said = /^Bounds: (\d+)–(\d+)\.$/m.exec(doc as string);
    expect(said ? [Number(said[1]), Number(said[2])] : undefined).toEqual(b);
  });
});

describe("the README's configuration table", () => {
  it("lists every setting once, in the schema's order, with the code's default and bounds", () => {
    expect(problems(README)).toEqual([]);
  });

  it("names each kind of drift", () => {
    const drifted = README.replace(
      "| `topK` | `3` | Most skills loaded at one prompt (0–50) |",
      "| `topK` | `4` | (0–40) |",
    )
      .replace(/^\| `telemetryPath` .*\n/m, "")
      .replace("| `enabled` |", "| `enabledd` |");
    expect(drifted).not.toBe(README);
    expect(problems(drifted)).toEqual([
      "README lacks enabled, telemetryPath",
      "README lists keys the schema does not have: enabledd",
      "topK: README says 4, the code's default is 3",
      "topK: README says (0–40), the schema allows 0–50",
    ]);
  });
});
