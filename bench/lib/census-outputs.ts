// The census workload's tool outputs, shared by bench/census.ts and bench/turn-end-cost.ts.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { generateOutput } from "../../test/kit/generate.ts";

/** The real tool outputs of 8–45 KB in the sessions folder (generated grep outputs if there are none). */
export function censusOutputs(sessions: string): string[] {
  const out: string[] = [];
  if (existsSync(sessions)) {
    for (const file of readdirSync(sessions)
      .filter((f) => f.endsWith(".jsonl"))
      .sort()) {
      for (const line of readFileSync(join(sessions, file), "utf8").split("\n")) {
        if (!line.includes('"toolResult"')) continue;
        try {
          const e = JSON.parse(line);
          if (e.type !== "message" || e.message?.role !== "toolResult") continue;
          const text = (e.message.content ?? [])
            .filter((b: { type?: string }) => b.type === "text")
            .map((b: { text?: string }) => b.text ?? "")
            .join("");
          if (text.length >= 8_000 && text.length <= 45_000) out.push(text);
        } catch {
          // Not an entry.
        }
      }
    }
  }
  if (out.length > 0) return out;
  return Array.from({ length: 20 }, (_, i) => generateOutput("grep", 8_000 + i * 1_800, i + 1));
}
