// `/guard <subcommand>` typed in Pi's own editor runs on the first Enter: an argument menu that is still
// open takes Enter to apply its selection, so none may be open once a whole subcommand is typed.
import { CombinedAutocompleteProvider, Editor, type EditorTheme, type TUI } from "@earendil-works/pi-tui";
import { describe, expect, it } from "vitest";
import { argumentCompletions, guardCommand } from "../../../../src/main/session/guard-command.ts";

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
