// `/guard`: status (the default), stats, trace, on, off, judge, reload, and list, restore and pin (out-list.ts), on the
// session the command runs in.
import type { ExtensionCommandContext, ExtensionContext, RegisteredCommand } from "@earendil-works/pi-coding-agent";
import { redactKnown } from "../platform/secrets.ts";
import { loadSettings, saveSetting } from "../platform/settings.ts";
import { swallowedErrors } from "../platform/swallowed.ts";
import { telemetryStatsReport } from "../platform/telemetry.ts";
import { warn } from "../platform/warn.ts";
import { OUT_COMMANDS, type OutCommand, runOutCommand } from "./out-list.ts";
import { moneyLine, traceReport } from "./report.ts";
import type { SessionGuard } from "./session-guard.ts";
import { terminalWidth } from "./session-view.ts";

const SUBCOMMANDS = ["status", "stats", "trace", "on", "off", "judge", "reload", ...OUT_COMMANDS];

/** Appends a custom entry on the branch (Pi's `appendEntry`), for restore and pin. */
type Append = (customType: string, data: unknown) => void;

const cannotAppend: Append = () => {
  throw new Error("context-guard: this /guard cannot write to the session");
};

/** The command's registration, on whatever session is open when it runs. */
export function guardCommand(
  session: () => SessionGuard | undefined,
  append?: Append,
): Omit<RegisteredCommand, "name" | "sourceInfo"> {
  return {
    description: "context-guard: status, stats, trace, on, off, judge, reload, list, restore <id>, pin <id>",
    getArgumentCompletions: argumentCompletions,
    handler: (args, ctx) => runGuardCommand(args, ctx, session(), append),
  };
}

/**
 * The subcommands the typed argument starts. None once it is a whole subcommand: while Pi's editor shows an
 * argument menu, Enter applies the selected item instead of submitting, so a menu offering what is already
 * typed would take the first Enter.
 */
export function argumentCompletions(prefix: string): Array<{ value: string; label: string }> | null {
  const typed = prefix.trim().toLowerCase();
  if (SUBCOMMANDS.includes(typed)) return null;
  const items = SUBCOMMANDS.filter((c) => c.startsWith(typed)).map((c) => ({ value: c, label: c }));
  return items.length > 0 ? items : null;
}

export async function runGuardCommand(
  args: string,
  ctx: ExtensionCommandContext | ExtensionContext,
  session: SessionGuard | undefined,
  append?: Append,
): Promise<void> {
  // Entry ids are case-sensitive: only the subcommand is lowercased.
  const [head = "", ...rest] = args.trim().split(/\s+/);
  const command = head.toLowerCase() || "status";
  if (!session) {
    ctx.ui.notify("context-guard: no active session", "warning");
    return;
  }
  if (command === "on" || command === "off") {
    const enabled = command === "on";
    session.config = { ...session.config, enabled };
    session.markSwitch(ctx);
    try {
      const saved = await saveSetting("enabled", enabled, session.settingsPath);
      const where = saved.file === session.settingsPath ? "" : ` → ${saved.file}`;
      ctx.ui.notify(`context-guard is ${command} (saved to ${session.settingsPath}${where})`, "info");
    } catch (error) {
      // The message names the file and says why; the file is as it was.
      ctx.ui.notify(
        `context-guard is ${command} for this session only, not saved: ${redactKnown((error as Error).message)}`,
        "error",
      );
    }
    session.draw(ctx);
    return;
  }
  if (command === "reload") {
    const loaded = await loadSettings(session.settingsPath);
    session.useSettings(loaded, ctx.mode);
    // A reload usually follows a fix (a key, a model): a paused classifier is asked again at once.
    session.pipeline.breaker.reset();
    session.markSwitch(ctx);
    for (const w of loaded.warnings) warn(ctx, w);
    ctx.ui.notify(
      `context-guard: settings reloaded from ${loaded.path}${loaded.warnings.length ? "" : " (no warnings)"}`,
      "info",
    );
    session.draw(ctx);
    return;
  }
  if (command === "judge") {
    if (!session.config.enabled) {
      ctx.ui.notify("context-guard is off: /guard on first, then /guard judge", "warning");
      return;
    }
    const held = session.judgeOffSpans(ctx);
    ctx.ui.notify(
      held > 0
        ? `context-guard: ${held} entries made while the guard was off are no longer held back; later passes judge them like the rest`
        : "context-guard: nothing on this branch was made while the guard was off",
      "info",
    );
    return;
  }
  if (command === "stats") {
    const stats = await telemetryStatsReport(session.telemetry, session.config);
    // The telemetry file has no dollars: this session's, the footer's figure, once it has been priced.
    const saved = session.savedSoFar;
    ctx.ui.notify(saved ? `${stats}\n${moneyLine(saved, "This session, ")}` : stats, "info");
    return;
  }
  if (command === "trace") {
    const width = terminalWidth(ctx);
    ctx.ui.notify(traceReport(ctx.sessionManager.getBranch(), width, swallowedErrors()), "info");
    return;
  }
  if ((OUT_COMMANDS as readonly string[]).includes(command)) {
    await runOutCommand(command as OutCommand, rest.join(" "), ctx, session, append ?? cannotAppend);
    return;
  }
  if (command !== "status") {
    ctx.ui.notify(
      `context-guard: unknown argument "${command}"; use /guard, /guard stats, /guard trace, /guard on, /guard off, /guard judge, /guard reload, /guard list, /guard restore <id> or /guard pin <id>`,
      "warning",
    );
    return;
  }
  ctx.ui.notify(session.report(ctx), "info");
}
