// `/guard <subcommand>` typed in Pi's own editor runs on the first Enter: an argument menu that is still
// open takes Enter to apply its selection, so none may be open once a whole subcommand is typed.
import { CombinedAutocompleteProvider, Editor, type EditorTheme, type TUI } from "@earendil-works/pi-tui";
import { describe, expect, it } from "vitest";
import type { SavedSoFar } from "../../../../src/core/replay/saved-so-far.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { Telemetry } from "../../../../src/main/platform/telemetry.ts";
import { argumentCompletions, guardCommand, runGuardCommand } from "../../../../src/main/session/guard-command.ts";

const plain = (s: string) => s;
const theme: EditorTheme = {
  borderColor: plain,
  selectList: { selectedPrefix: plain, selectedText: plain, description: plain, scrollInfo: plain, noMatch: plain },
};

/** Pi's editor with Pi's autocomplete over the `/guard` command, and what it submitted. */
function editor() {
  const tui = { requestRender() {}, terminal: { rows: 40, columns: 100 } } as unknown as TUI;
  const ed = new Editor(tui, theme);
  const command = { name: "guard", ...guardCommand(() => undefined) };
  ed.setAutocompleteProvider(new CombinedAutocompleteProvider([command], process.cwd()));
  const submitted: string[] = [];
  ed.onSubmit = (text) => submitted.push(text);
  return { ed, submitted };
}

/** Lets the editor's debounced, asynchronous autocomplete request finish. */
async function settle(ed: Editor): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 30));
    await (ed as unknown as { autocompleteRequestTask?: Promise<void> }).autocompleteRequestTask;
  }
}

async function type(ed: Editor, text: string): Promise<void> {
  for (const ch of text) {
    ed.handleInput(ch);
    await settle(ed);
  }
}

describe("/guard argument completion", () => {
  it("offers the subcommands a partial argument starts, and none for a whole one", () => {
    expect(argumentCompletions("st")?.map((i) => i.value)).toEqual(["status", "stats"]);
    expect(argumentCompletions("stats")).toBeNull();
    expect(argumentCompletions(" OFF ")).toBeNull();
    expect(argumentCompletions("nope")).toBeNull();
  });

  it("runs `/guard stats` on the first Enter in Pi's editor", async () => {
    const { ed, submitted } = editor();
    await type(ed, "/guard stats");
    expect(ed.isShowingAutocomplete()).toBe(false);
    ed.handleInput("\r");
    expect(submitted).toEqual(["/guard stats"]);
  });

  it("still completes a partial argument from the menu", async () => {
    const { ed, submitted } = editor();
    await type(ed, "/guard of");
    expect(ed.isShowingAutocomplete()).toBe(true);
    ed.handleInput("\t");
    expect(ed.getText()).toBe("/guard off");
    expect(submitted).toEqual([]);
  });
});

describe("/guard stats", () => {
  /** `/guard stats` on a session whose footer has priced `saved` (or not yet); what it says. */
  async function stats(saved: SavedSoFar | undefined): Promise<string> {
    const notices: string[] = [];
    const ctx = { hasUI: true, ui: { notify: (m: string) => notices.push(m) } } as never;
    const config = { ...DEFAULT_CONFIG, telemetry: false, telemetryPath: "/nonexistent/cg-telemetry.jsonl" };
    const session = { telemetry: new Telemetry({ getConfig: () => undefined }), config, savedSoFar: saved };
    await runGuardCommand("stats", ctx, session as never);
    return notices.join("\n");
  }

  it("adds the session's dollars saved, the footer's figure, once it is priced", async () => {
    const saved: SavedSoFar = {
      requests: 4,
      priced: true,
      off: 1.2,
      on: 0.8,
      classifier: 0.02,
      net: 0.38,
      tokens: 120_000,
      last: { offTokens: 40_000, onTokens: 30_000, cacheRead: 0.3 },
    };
    expect(await stats(saved)).toContain(
      "This session, saved so far: $0.380, after the classifier's $0.020 (≈120k prompt tokens not sent).",
    );
    expect(await stats({ ...saved, net: -0.03, on: 1.21 })).toMatch(
      /This session, so far the guard has cost \$0\.030 more than it saved/,
    );
    expect(await stats(undefined)).not.toContain("This session");
  });
});
