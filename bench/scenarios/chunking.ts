// Benchmark 4: chunking throughput against the machine's limit for the same text, a plain indexOf("\n")
// scan (the least any line-based chunker must do).
import { chunkOutput, isGrepStyle } from "../../src/core/distill/chunk.ts";
import { timeSync } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { type OutputKind, output, sizeLabel } from "../lib/workloads.ts";

export interface ChunkSample {
  kind: OutputKind;
  bytes: number;
  label: string;
  chars: number;
  rep: number;
  chunks: number;
  grep: boolean;
  chunkMs: number;
  scanMs: number;
  lines: number;
}

function scanNewlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

export function runChunking(mode: BenchMode, log: (line: string) => void): ChunkSample[] {
  const samples: ChunkSample[] = [];
  for (const { kind, bytes } of mode.chunkOutputs) {
    const text = output(kind, bytes);
    const grep = isGrepStyle(text);
    // Interleave the two measurements; rep -1 warms both up.
    for (let rep = -1; rep < mode.reps; rep++) {
      const scan = timeSync(() => scanNewlines(text));
      const chunked = timeSync(() => chunkOutput(text));
      if (rep < 0) continue;
      samples.push({
        kind,
        bytes,
        label: `${kind} ${sizeLabel(bytes)}`,
        chars: text.length,
        rep,
        chunks: chunked.value.length,
        grep,
        chunkMs: chunked.ms,
        scanMs: scan.ms,
        lines: scan.value,
      });
    }
    log(`  chunking ${kind} ${sizeLabel(bytes)}: done`);
  }
  return samples;
}
