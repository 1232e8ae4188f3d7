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

  it("colours the dollars saved, and dims a guard that has cost more so far", () => {
    const savings = { chars: 8000, items: 3 };
    const dollars = (net: number) => ({ priced: true, off: 1, on: 1 - net, classifier: 0, net }) as never;
    expect(styledStatus({ kind: "ready", savings, dollars: dollars(0.42) }, theme)).toBe(
      "<success>🛡 $0.420 saved</success><dim> · −2k · 3</dim>",
    );
    // Every part of the text is coloured, whatever it says.
    expect(styledStatus({ kind: "ready", savings, dollars: dollars(-0.03) }, theme)).toBe(
      "<dim>🛡 cost $0.030 more so far · −2k · 3</dim>",
    );
  });

  it("says a pass is pending rather than 0 saved, and next to what was saved", () => {
    const none = { chars: 0, items: 0 };
    expect(styledStatus({ kind: "ready", savings: none }, theme)).toBe("<dim>🛡 0 saved</dim>");
    expect(styledStatus({ kind: "ready", savings: none, pending: true }, theme)).toBe("<dim>🛡 pass pending</dim>");
    expect(styledStatus({ kind: "ready", savings: { chars: 8000, items: 3 }, pending: true }, theme)).toMatch(
      /^<success>🛡 −\S+<\/success><dim> · 3 · pass pending<\/dim>$/u,
    );
  });

  it("says why the guard is off when its worker threads do not start", () => {
    expect(styledStatus({ kind: "no-workers", error: "invalid execArgv flags: --expose-gc" }, theme)).toBe(
      "<warning>🛡 off: worker threads do not start (invalid execArgv flags: --expose-gc)</warning>",
    );
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
