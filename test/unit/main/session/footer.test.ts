// The footer: colours by state, and only a changed text reaches the UI.
import { describe, expect, it } from "vitest";
import { Footer, styledStatus } from "../../../../src/main/session/footer.ts";

const theme = { fg: (colour: string, text: string) => `<${colour}>${text}</${colour}>` };

describe("the footer", () => {
  it("shows savings in the success colour and the rest dimmed; a problem as a warning", () => {
    const ready = { kind: "ready", savings: { chars: 8000, items: 3 } } as const;
    expect(styledStatus(ready, theme)).toMatch(/^<success>🛡 −\S+<\/success><dim> · 3<\/dim>$/u);
    expect(styledStatus({ kind: "busy" }, theme)).toBe("<dim>🛡 distilling…</dim>");
    expect(styledStatus({ kind: "checkpoint" }, theme)).toBe("<dim>🛡 checkpoint…</dim>");
    expect(styledStatus({ kind: "handing-over" }, theme)).toBe("<dim>🛡 prompt waiting · handing over…</dim>");
    expect(styledStatus({ kind: "off" }, theme)).toBe("<warning>🛡 guard off</warning>");
  });

  it("sends a text to the UI only when it changed", () => {
    const sent: Array<string | undefined> = [];
    const ctx = { ui: { theme, setStatus: (_key: string, text: string | undefined) => sent.push(text) } } as never;
    const footer = new Footer();
    footer.show(ctx, { kind: "busy" });
    footer.show(ctx, { kind: "busy" });
    footer.show(ctx, { kind: "off" });
    expect(sent).toEqual(["<dim>🛡 distilling…</dim>", "<warning>🛡 guard off</warning>"]);
  });
});
