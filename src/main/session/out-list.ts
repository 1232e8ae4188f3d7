// `/guard list`, `/guard restore <id>` and `/guard pin <id>`. In Pi's TUI the list is a picker built from
// Pi's own components (SelectList in a custom view, then a select of actions: restore, pin, preview);
// elsewhere (print, JSON, RPC) the same list is one text notice.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Container, type SelectItem, SelectList, Text } from "@earendil-works/pi-tui";
import {
  formatOutList,
  itemHeadline,
  itemSize,
  itemWhat,
  itemWhen,
  type OutItem,
  pinMark,
} from "../../core/records/out-of-context.ts";
import { type Pins, readPins } from "../../core/records/pins.ts";
import { count } from "../../core/shared/text.ts";
import { readContent } from "../pass/snapshot.ts";
import { type CommandOutcome, listOut, pinEntry, type RestoreHost, restoreEntry } from "./restore.ts";
import type { SessionGuard } from "./session-guard.ts";

export const OUT_COMMANDS = ["list", "restore", "pin"] as const;
export type OutCommand = (typeof OUT_COMMANDS)[number];

/** Lines of the original a preview shows, and their width. */
const PREVIEW_LINES = 12;
const PREVIEW_WIDTH = 160;

function tell(ctx: ExtensionContext, outcome: CommandOutcome): void {
  ctx.ui.notify(outcome.message, outcome.ok ? "info" : "warning");
}

export async function runOutCommand(
  command: OutCommand,
  arg: string,
  ctx: ExtensionContext,
  session: SessionGuard,
  append: RestoreHost["appendEntry"],
): Promise<void> {
  const host: RestoreHost = session.restoreHost(append);
  if (command === "restore" || command === "pin") {
    tell(ctx, command === "restore" ? restoreEntry(host, ctx, arg) : pinEntry(host, ctx, arg));
    session.draw(ctx);
    return;
  }
  if (ctx.hasUI && ctx.mode === "tui") {
    await pickFromList(host, ctx, session);
    return;
  }
  const { items, snap } = listOut(host, ctx);
  ctx.ui.notify(formatOutList(items, readPins(snap)), "info");
}

/** The first lines of an item's original (an exchange: its prompt, and how many entries came with it). */
export function preview(ctx: ExtensionContext, item: OutItem): string {
  const entry = ctx.sessionManager.getEntry(item.entryId) as { message?: { content?: unknown }; content?: unknown };
  const text = readContent(entry?.message?.content ?? entry?.content).text;
  const lines = text.split("\n");
  const shown = lines
    .slice(0, PREVIEW_LINES)
    .map((l) => (l.length > PREVIEW_WIDTH ? `${l.slice(0, PREVIEW_WIDTH)}…` : l));
  const more = lines.length > PREVIEW_LINES ? [`… ${count(lines.length - PREVIEW_LINES, "more line")}`] : [];
  const exchange =
    item.omitted.length > 0
      ? [`… and ${count(item.omitted.length, "more entry", "more entries")} of this exchange`]
      : [];
  return [`context-guard preview of ${item.entryId} (${itemHeadline(item)}):`, ...shown, ...more, ...exchange].join(
    "\n",
  );
}

/** The picker: choose an item, then what to do with it. Preview comes back to the list. */
async function pickFromList(host: RestoreHost, ctx: ExtensionContext, session: SessionGuard): Promise<void> {
  for (;;) {
    const { items, snap } = listOut(host, ctx);
    if (items.length === 0) {
      ctx.ui.notify(formatOutList(items, readPins(snap)), "info");
      return;
    }
    const chosen = await chooseItem(ctx, items, readPins(snap));
    const item = items.find((i) => i.entryId === chosen);
    if (!item) return;
    const action = await ctx.ui.select(`${item.entryId} · ${itemHeadline(item)}`, [
      "restore (put the original back, and pin it)",
      "pin (keep it as it is, never judged again)",
      "preview (the first lines of the original)",
      "back to the list",
    ]);
    if (action?.startsWith("restore")) {
      tell(ctx, restoreEntry(host, ctx, item.entryId));
      session.draw(ctx);
      return;
    }
    if (action?.startsWith("pin")) {
      tell(ctx, pinEntry(host, ctx, item.entryId));
      session.draw(ctx);
      return;
    }
    if (action?.startsWith("preview")) ctx.ui.notify(preview(ctx, item), "info");
    else if (!action?.startsWith("back")) return;
  }
}

/**
 * The list: a mark (📌 pinned, ↺ being restored), id, kind and label in the first column, size and run
 * beside; the selected item's label in full and why, below (the column cuts long labels).
 */
function chooseItem(ctx: ExtensionContext, items: readonly OutItem[], pins: Pins): Promise<string | null> {
  const options: SelectItem[] = items.map((item) => ({
    value: item.entryId,
    label: `${pinMark(item, pins) || "  "}${item.entryId}  ${itemWhat(item)}`,
    description: `${itemSize(item)} · ${itemWhen(item)}`,
  }));
  const detailOf = (id: string | undefined) => {
    const item = items.find((i) => i.entryId === id);
    if (!item) return "";
    const mark = pins.restored.has(item.entryId)
      ? " (being restored)"
      : pins.pinned.has(item.entryId)
        ? " (pinned: never judged again)"
        : "";
    return `${itemWhat(item)}${mark}\nwhy: ${item.why}`;
  };
  return ctx.ui.custom<string | null>((_tui, theme, _keys, done) => {
    const container = new Container();
    container.addChild(new Text(theme.fg("accent", theme.bold(`Out of context on this branch (${items.length})`))));
    const list = new SelectList(
      options,
      Math.min(options.length, 10),
      {
        selectedPrefix: (t) => theme.fg("accent", t),
        selectedText: (t) => theme.fg("accent", t),
        description: (t) => theme.fg("muted", t),
        scrollInfo: (t) => theme.fg("dim", t),
        noMatch: (t) => theme.fg("warning", t),
      },
      { minPrimaryColumnWidth: 40, maxPrimaryColumnWidth: 72 },
    );
    const detail = new Text(theme.fg("muted", detailOf(options[0]?.value)));
    list.onSelect = (item) => done(item.value);
    list.onCancel = () => done(null);
    list.onSelectionChange = (item) => detail.setText(theme.fg("muted", detailOf(item.value)));
    container.addChild(list);
    container.addChild(detail);
    container.addChild(
      new Text(theme.fg("dim", "↑↓ move · enter choose (restore, pin, preview) · esc close · 📌 pinned")),
    );
    return {
      render: (width: number) => container.render(width),
      invalidate: () => container.invalidate(),
      handleInput: (data: string) => list.handleInput(data),
    };
  });
}
