// Bad input in the real Pi (the same checks without Pi are in test/unit/bad-input.test.ts): /guard on|off
// against a settings file being read or half edited, a session whose settings file is broken, recall arguments
// through Pi's own tool validation, and tool outputs with NUL bytes, lone surrogates, CRLF, binary and corrupt
// images. Nothing crashes, nothing is lost, and every error says what to do.
import { chmod, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { InlineExtension } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { describe, expect, it } from "vitest";
import { readContent } from "../../src/main/pass/snapshot.ts";
import { saveSetting } from "../../src/main/platform/settings.ts";
import { faultSession } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";

// ------------------------------------------------------------------------------------------------------------
// Settings

describe("a settings file", () => {
  it("/guard off writes atomically, keeps unknown keys, and never overwrites a broken file", async () => {
    const s = await faultSession({ config: {}, responses: [] });
    // The live session's settings file (faultSession points PI_CONTEXT_GUARD_CONFIG at it).
    const path = process.env.PI_CONTEXT_GUARD_CONFIG as string;
    const folder = join(path, "..");
    try {
      await writeFile(path, JSON.stringify({ custom: { nested: [1, 2] }, minResultChars: 5000, telemetry: false }));
      await chmod(path, 0o644);
      const { ui, notices } = capturingUi();
      s.session.extensionRunner.setUIContext(ui, "tui");
      // A reader polling the file while /guard toggles it never sees a partial file.
      let reads = 0;
      let reading = true;
      const reader = (async () => {
        while (reading) {
          JSON.parse(await readFile(path, "utf8"));
          reads++;
        }
      })();
      for (const cmd of ["off", "on", "off"]) await s.session.prompt(`/guard ${cmd}`);
      reading = false;
      await reader;
      expect(reads).toBeGreaterThan(0);
      expect(JSON.parse(await readFile(path, "utf8"))).toEqual({
        custom: { nested: [1, 2] },
        minResultChars: 5000,
        telemetry: false,
        enabled: false,
      });
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect((await readdir(folder)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
      expect(notices.filter((n) => n.type === "error")).toEqual([]);

      // A file the user is halfway through editing is left alone, and /guard says so.
      const broken = '{ "minResultChars": 6000, "excludeTools": ["edit", ';
      await writeFile(path, broken);
      await s.session.prompt("/guard on");
      expect(await readFile(path, "utf8")).toBe(broken);
      expect(notices.some((n) => n.type === "error" && /not valid JSON.*left as it is/.test(n.message))).toBe(true);
      await writeFile(path, "[]");
      await expect(saveSetting("enabled", true, path)).rejects.toThrow(/not a JSON object; it was left as it is/);
      expect(await readFile(path, "utf8")).toBe("[]");
    } finally {
      await s.close();
    }
  });

  it("a session with a broken settings file starts, warns per key on /guard reload, and still guards", async () => {
    const s = await faultSession({
      config: { minResultChars: "big", timeoutMs: -1, excludeTools: "edit", mystery: true, midRun: false },
      responses: [{ toolCalls: [{ name: "bash", arguments: { command: "cat a.txt" } }] }, "done"],
      files: { "a.txt": `${Array.from({ length: 800 }, (_, i) => `src/f${i % 30}.ts:${i}:x${i}`).join("\n")}\n` },
    });
    try {
      const { ui, notices } = capturingUi();
      s.session.extensionRunner.setUIContext(ui, "tui");
      await s.session.prompt("/guard reload");
      const warnings = notices.filter((n) => n.type === "warning").map((n) => n.message);
      for (const key of ["minResultChars", "timeoutMs", "excludeTools", "mystery"]) {
        expect(warnings.filter((w) => w.startsWith(`context-guard: ${key}: `))).toHaveLength(1);
      }
      await s.session.prompt("look");
      expect(s.records()).toHaveLength(1);
    } finally {
      await s.close();
    }
  });
});

// ------------------------------------------------------------------------------------------------------------
// Recall arguments

describe("recall with bad arguments", () => {
  it("through Pi's own tool validation the model still gets an error naming the parameter", async () => {
    let id = "";
    const recallCall = (args: JsonObject) => () => {
      return { toolCalls: [{ name: "recall", arguments: { entryId: id, ...args } }] };
    };
    const s = await faultSession({
      config: { midRun: false },
      responses: [
        { toolCalls: [{ name: "bash", arguments: { command: "seq 1 20" } }] },
        (context) => {
          id = s.session.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "toolResult")
            ?.id as string;
          void context;
          return recallCall({ limit: -2 })();
        },
        recallCall({ offset: "seven" }),
        recallCall({ offset: "3", limit: "2" }),
        "ok",
      ],
    });
    try {
      await s.session.prompt("go");
      const last = s.contexts.at(-1) as Array<{ role: string; isError?: boolean; content?: Array<{ text?: string }> }>;
      const results = last.filter((m) => m.role === "toolResult").slice(1);
      const text = (i: number) => results[i]?.content?.[0]?.text ?? "";
      expect(results.slice(0, 2).map((r) => r.isError)).toEqual([true, true]);
      expect(text(0)).toBe("recall: limit: limit must be at least 1");
      expect(text(1)).toMatch(/offset: expected integer/);
      // Numbers sent as strings are coerced by Pi and work.
      expect(results[2]?.isError).toBe(false);
      expect(text(2)).toMatch(/^3\n4\n\[Showing lines 3–4 of 20/);
    } finally {
      await s.close();
    }
  });
});

// ------------------------------------------------------------------------------------------------------------
// Tool outputs and images

const NASTY: Record<string, string> = {
  nul: Array.from({ length: 300 }, (_, i) => `row\u0000${i}\u0000${"n".repeat(20)}`).join("\n"),
  surrogates: Array.from({ length: 300 }, (_, i) => `pair 😀 lone \ud800 and \udfff end ${i}`).join("\n"),
  crlf: Array.from({ length: 300 }, (_, i) => `src/c${i % 9}.ts:${i}:crlf line ${i}`).join("\r\n"),
  binary: Buffer.from(Array.from({ length: 12_000 }, (_, i) => (i * 7919) % 256)).toString("latin1"),
  invalidUtf8: Buffer.from(Array.from({ length: 12_000 }, (_, i) => (i % 3 === 0 ? 0xc3 : (i * 31) % 256))).toString(
    "utf8",
  ),
};

/** A tool that returns one of the nasty outputs (and, for "image", corrupt images) verbatim. */
const nastyTool: InlineExtension = (pi) => {
  pi.registerTool({
    name: "emit",
    label: "Emit",
    description: "Emit a canned output",
    parameters: Type.Object({ kind: Type.String() }),
    async execute(_id, params: { kind: string }) {
      if (params.kind === "image") {
        return {
          content: [
            { type: "text", text: "screenshot" },
            { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }, // a PNG signature, then nothing
            { type: "image", data: "/9j/4AAQ", mimeType: "image/jpeg" }, // a JPEG cut inside its first segment
            { type: "image", data: "not base64 at all!", mimeType: "image/webp" },
          ],
          details: undefined,
        };
      }
      return { content: [{ type: "text", text: NASTY[params.kind] ?? "" }], details: undefined };
    },
  });
};

describe("nasty tool outputs in the real Pi", () => {
  it("NUL, lone surrogates, CRLF, binary and corrupt images: valid edits, verbatim kept lines", async () => {
    const kinds = Object.keys(NASTY);
    const emit = (kind: string) => ({ toolCalls: [{ name: "emit", arguments: { kind } as JsonObject }] });
    const s = await faultSession({
      config: {
        midRun: false,
        pruneExchanges: false,
        minResultChars: 2000,
        smallResultMinChars: 400,
        imageKeepTurns: 1,
      },
      responses: [emit("image"), ...kinds.map(emit), "done", "next", "ok"],
      extensionFactories: [nastyTool],
    });
    try {
      await s.session.prompt("emit everything");
      await s.session.prompt("and again");
      const records = s.records();
      expect(records.length).toBeGreaterThan(0);
      // Pi appended every edit: each target exists, and the projection still pairs every call.
      const projection = s.session.sessionManager.buildSessionProjection();
      const calls = new Set<string>();
      const results = new Set<string>();
      for (const m of projection.messages as Array<{ role: string; content?: unknown; toolCallId?: string }>) {
        if (m.role === "assistant") for (const c of readContent(m.content).toolCalls) calls.add(c.id);
        if (m.role === "toolResult" && m.toolCallId) results.add(m.toolCallId);
      }
      expect([...calls].sort()).toEqual([...results].sort());
      const edits = s.edits() as unknown as Array<{
        targetId: string;
        replacement: { content: Array<{ text: string }> };
      }>;
      expect(edits.length).toBeGreaterThan(0);
      for (const e of edits) {
        const raw = readContent(
          (s.session.sessionManager.getEntry(e.targetId) as { message: { content: unknown } }).message.content,
        ).text;
        const shown = e.replacement.content.map((b) => b.text).join("\n");
        expect(shown.startsWith("[context-guard]")).toBe(true);
        for (const line of shown.split("\n").slice(1)) {
          if (!line.startsWith("[… ") && line !== "screenshot") expect(raw.includes(line)).toBe(true);
        }
      }
      // The corrupt images were removed by age with "size unknown", and the text kept.
      const image = records.flatMap((r) => r.results).find((r) => r.kind === "image");
      expect(image).toMatchObject({ outcome: "removed" });
    } finally {
      await s.close();
    }
  });
});
