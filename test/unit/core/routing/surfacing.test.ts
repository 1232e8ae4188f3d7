import { describe, expect, it } from "vitest";
import {
  coreToolSet,
  detectMiss,
  groupTools,
  namespaceOf,
  planActiveTools,
  sameToolSet,
  unknownToolText,
} from "../../../../src/core/routing/surfacing.ts";

const namespaces = {
  browser: { prefix: "browser_" },
  browserDev: { prefix: "browser_dev_" },
  search: { tools: ["web_lookup", "browser_search"], description: "Web search" },
};
const core = coreToolSet(["my_core_tool"]);

describe("namespace membership", () => {
  it("explicit tools win, then the longest prefix; core tools belong to none", () => {
    expect(namespaceOf("browser_open", namespaces, core)).toBe("browser");
    expect(namespaceOf("browser_dev_tools", namespaces, core)).toBe("browserDev");
    expect(namespaceOf("browser_search", namespaces, core)).toBe("search");
    expect(namespaceOf("web_lookup", namespaces, core)).toBe("search");
    expect(namespaceOf("bash", namespaces, core)).toBe(undefined);
    expect(namespaceOf("other", namespaces, core)).toBe(undefined);
    expect(namespaceOf("my_core_tool", { x: { prefix: "my_" } }, core)).toBe(undefined);
    expect(namespaceOf("recall", { r: { prefix: "re" } }, coreToolSet())).toBe(undefined);
  });

  it("groups whatever is registered now, so tools registered later join by prefix", () => {
    const early = groupTools([{ name: "read" }, { name: "bash" }], namespaces, core);
    expect(early.get("browser")).toEqual([]);
    const later = groupTools(
      [
        { name: "read" },
        { name: "browser_open", exposure: "direct" },
        { name: "browser_late_click" },
        { name: "browser_hidden", exposure: "hidden" },
        { name: "browser_deferred", exposure: "deferred" },
      ],
      namespaces,
      core,
    );
    expect(later.get("browser")).toEqual(["browser_open", "browser_late_click"]);
  });
});

describe("planActiveTools", () => {
  const groups = new Map([
    ["browser", ["browser_open", "browser_click"]],
    ["search", ["web_lookup"]],
  ]);
  const active = ["read", "bash", "browser_open", "browser_click", "web_lookup", "other_tool"];

  it("hides namespaces that are not surfaced and leaves everything else alone", () => {
    const plan = planActiveTools({ active, groups, surfaced: new Set(["search"]), hidden: new Set(), core });
    expect(plan.active).toEqual(["read", "bash", "web_lookup", "other_tool"]);
    expect(plan.hid).toEqual(["browser_open", "browser_click"]);
    expect([...plan.hidden]).toEqual(["browser_open", "browser_click"]);
    expect(plan.changed).toBe(true);
  });

  it("gives back what it hid once the namespace is surfaced, and changes nothing when nothing changes", () => {
    const first = planActiveTools({ active, groups, surfaced: new Set(), hidden: new Set(), core });
    const again = planActiveTools({ active: first.active, groups, surfaced: new Set(), hidden: first.hidden, core });
    expect(again.changed).toBe(false);
    expect(again.active).toEqual(first.active);
    const back = planActiveTools({
      active: first.active,
      groups,
      surfaced: new Set(["browser"]),
      hidden: first.hidden,
      core,
    });
    expect(back.shown).toEqual(["browser_open", "browser_click"]);
    expect(back.active).toEqual(["read", "bash", "other_tool", "browser_open", "browser_click"]);
    expect([...back.hidden]).toEqual(["web_lookup"]);
  });

  it('"all" restores everything surfacing hid (fail-static)', () => {
    const first = planActiveTools({ active, groups, surfaced: new Set(), hidden: new Set(), core });
    const all = planActiveTools({ active: first.active, groups, surfaced: "all", hidden: first.hidden, core });
    expect(sameToolSet(all.active, active)).toBe(true);
    expect(all.hidden.size).toBe(0);
  });

  it("never hides a core tool even if a namespace claims it", () => {
    const plan = planActiveTools({
      active: ["read", "bash"],
      groups: new Map([["greedy", ["bash"]]]),
      surfaced: new Set(),
      hidden: new Set(),
      core,
    });
    expect(plan.active).toEqual(["read", "bash"]);
    expect(plan.changed).toBe(false);
  });

  it("does not activate a namespace tool it never hid", () => {
    const plan = planActiveTools({
      active: ["read"],
      groups: new Map([["browser", ["browser_open"]]]),
      surfaced: new Set(["browser"]),
      hidden: new Set(),
      core,
    });
    expect(plan.active).toEqual(["read"]);
  });
});

describe("miss detection", () => {
  const hidden = new Set(["browser_open"]);
  const result = (toolName: string, text: string, isError = true) => ({
    role: "toolResult",
    toolName,
    isError,
    content: [{ type: "text", text }],
  });

  it("is Pi's unknown-tool error for a tool surfacing hid", () => {
    expect(unknownToolText("browser_open")).toBe("Tool browser_open not found");
    expect(detectMiss(result("browser_open", "Tool browser_open not found"), hidden)).toBe("browser_open");
  });

  it("is nothing else", () => {
    expect(detectMiss(result("browser_open", "page failed to load"), hidden)).toBe(undefined);
    expect(detectMiss(result("browser_open", "Tool browser_open not found", false), hidden)).toBe(undefined);
    expect(detectMiss(result("nope", "Tool nope not found"), hidden)).toBe(undefined);
    expect(detectMiss({ role: "assistant" }, hidden)).toBe(undefined);
  });
});
