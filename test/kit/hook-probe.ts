// Test helpers around a real Pi session: how long the guard's hooks take, and what it shows the user.
//
// Pi runs an event's handlers in extension order: path extensions first, then inline factories. Loading
// HOOK_PROBE (a path) before the guard and `hookProbeEnd` (an inline factory) after it brackets the
// guard's handler of every boundary event, so `durations()` is the time the guard held that boundary.
import { fileURLToPath } from "node:url";
import type { ExtensionAPI, InlineExtension } from "@earendil-works/pi-coding-agent";

/** Load this file (a Pi extension) before the guard. */
export const HOOK_PROBE = fileURLToPath(import.meta.url);

export const PROBED_EVENTS = ["turn_end", "agent_before_settle", "before_agent_start", "session_shutdown"] as const;
export type ProbedEvent = (typeof PROBED_EVENTS)[number];

type Mark = (session: string, event: ProbedEvent, edge: "start" | "end") => void;

interface ProbeGlobal {
  __cgHookProbe?: Mark;
}

function register(pi: ExtensionAPI, edge: "start" | "end"): void {
  const on = pi.on as (
    event: string,
    handler: (event: unknown, ctx: { sessionManager: { getSessionId(): string } }) => void,
  ) => void;
  for (const event of PROBED_EVENTS) {
    on(event, (_event, ctx) => {
      (globalThis as ProbeGlobal).__cgHookProbe?.(ctx.sessionManager.getSessionId(), event, edge);
    });
  }
}

/** The start probe (Pi loads it from this file). */
export default function hookProbeStart(pi: ExtensionAPI): void {
  register(pi, "start");
}

/** The end probe: pass it in `extensionFactories`. */
export const hookProbeEnd: InlineExtension = (pi) => register(pi, "end");

export interface HookTiming {
  event: ProbedEvent;
  ms: number;
}

/** Starts recording (for every session of this process); `durations(sessionId)` pairs starts with ends. */
export function recordHooks(): { durations(session: string): HookTiming[]; stop(): void } {
  const starts = new Map<string, number[]>();
  const done = new Map<string, HookTiming[]>();
  (globalThis as ProbeGlobal).__cgHookProbe = (session, event, edge) => {
    const key = `${session}\u0000${event}`;
    if (edge === "start") {
      const list = starts.get(key) ?? [];
      list.push(performance.now());
      starts.set(key, list);
      return;
    }
    const began = starts.get(key)?.shift();
    if (began === undefined) return;
    const list = done.get(session) ?? [];
    list.push({ event, ms: performance.now() - began });
    done.set(session, list);
  };
  return {
    durations: (session) => done.get(session) ?? [],
    stop: () => {
      (globalThis as ProbeGlobal).__cgHookProbe = undefined;
    },
  };
}

export interface Notice {
  message: string;
  type: string;
}

/**
 * A UI context that records notices and footer texts; everything else is a no-op. Install it with
 * `session.extensionRunner.setUIContext(ui, "tui")`: the guard then behaves as with a terminal.
 */
export function capturingUi(): { ui: never; notices: Notice[]; statuses: string[] } {
  const notices: Notice[] = [];
  const statuses: string[] = [];
  const none = () => undefined;
  const ui = {
    select: async () => undefined,
    confirm: async () => false,
    input: async () => undefined,
    editor: async () => undefined,
    custom: async () => undefined,
    notify: (message: string, type = "info") => notices.push({ message, type }),
    setStatus: (_key: string, text: string | undefined) => statuses.push(text ?? ""),
    onTerminalInput: () => none,
    setWorkingMessage: none,
    setWorkingVisible: none,
    setWorkingIndicator: none,
    setHiddenThinkingLabel: none,
    setWidget: none,
    setFooter: none,
    setHeader: none,
    setTitle: none,
    pasteToEditor: none,
    setEditorText: none,
    getEditorText: () => "",
    addAutocompleteProvider: none,
    setEditorComponent: none,
    getEditorComponent: none,
    theme: {
      fg: (_color: string, text: string) => text,
      bg: (_color: string, text: string) => text,
      bold: (t: string) => t,
    },
    getAllThemes: () => [],
    getTheme: none,
    setTheme: () => ({ success: false, error: "no UI" }),
    getToolsExpanded: () => false,
    setToolsExpanded: none,
  };
  return { ui: ui as never, notices, statuses };
}
