// Tool-namespace surfacing, the pure part: which registered tool belongs to which configured namespace,
// which tools to activate or hide for a set of surfaced namespaces, and when a tool call was a miss.
// No Pi, no IO.

export interface NamespaceConfig {
  prefix?: string;
  tools?: string[];
  description?: string;
}

/** Tools surfacing never hides, whatever the configuration says. */
const FIXED_CORE_TOOLS: readonly string[] = Object.freeze([
  "read",
  "write",
  "edit",
  "bash",
  "grep",
  "find",
  "ls",
  "recall",
]);

export function coreToolSet(extra: readonly string[] = []): Set<string> {
  return new Set([...FIXED_CORE_TOOLS, ...extra]);
}

export interface ToolInfo {
  name: string;
  /** Pi's exposure; only `direct` and `model-only` tools are declared to the model (undefined = direct). */
  exposure?: string;
}

const DECLARED = new Set(["direct", "model-only"]);

function isDeclarable(tool: ToolInfo): boolean {
  return tool.exposure === undefined || DECLARED.has(tool.exposure);
}

/**
 * The namespace a tool belongs to: the first namespace (in configuration order) that lists it explicitly,
 * else the one with the longest matching prefix. Core tools belong to none.
 */
export function namespaceOf(
  tool: string,
  namespaces: Readonly<Record<string, NamespaceConfig>>,
  core: ReadonlySet<string>,
): string | undefined {
  if (core.has(tool)) return undefined;
  let best: string | undefined;
  let bestLength = -1;
  for (const [name, ns] of Object.entries(namespaces)) {
    if (ns.tools?.includes(tool)) return name;
    if (ns.prefix && tool.startsWith(ns.prefix) && ns.prefix.length > bestLength) {
      best = name;
      bestLength = ns.prefix.length;
    }
  }
  return best;
}

/**
 * Registered, declarable tools per namespace, recomputed from Pi's tool list at every turn, so a tool
 * that registers later (an MCP server that connects late) joins its namespace by prefix.
 */
export function groupTools(
  tools: readonly ToolInfo[],
  namespaces: Readonly<Record<string, NamespaceConfig>>,
  core: ReadonlySet<string>,
): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const name of Object.keys(namespaces)) groups.set(name, []);
  for (const tool of tools) {
    if (!isDeclarable(tool)) continue;
    const ns = namespaceOf(tool.name, namespaces, core);
    if (ns !== undefined) groups.get(ns)?.push(tool.name);
  }
  return groups;
}

export interface ActivePlanInput {
  /** Pi's active tools now, in Pi's order. */
  active: readonly string[];
  groups: ReadonlyMap<string, readonly string[]>;
  /** Namespaces whose tools should be visible. `"all"` restores everything surfacing hid. */
  surfaced: ReadonlySet<string> | "all";
  /** Tools surfacing has hidden so far (and may bring back). */
  hidden: ReadonlySet<string>;
  core: ReadonlySet<string>;
}

export interface ActivePlan {
  active: string[];
  changed: boolean;
  /** Tools surfacing keeps hidden after this plan. */
  hidden: Set<string>;
  shown: string[];
  hid: string[];
}

/**
 * Hide the tools of namespaces that are not surfaced; bring back the tools surfacing hid earlier once
 * their namespace is surfaced. Core tools and tools outside every namespace keep whatever state Pi (or the
 * user, or another extension) gave them: surfacing only takes away what it owns and gives back what it took.
 */
export function planActiveTools(input: ActivePlanInput): ActivePlan {
  const owner = new Map<string, string>();
  for (const [ns, names] of input.groups) for (const n of names) if (!input.core.has(n)) owner.set(n, ns);
  const visible = (tool: string): boolean => {
    const ns = owner.get(tool);
    if (ns === undefined) return true;
    return input.surfaced === "all" || input.surfaced.has(ns);
  };
  const active: string[] = [];
  const hid: string[] = [];
  const hidden = new Set<string>();
  for (const name of input.active) {
    if (visible(name)) active.push(name);
    else {
      hid.push(name);
      hidden.add(name);
    }
  }
  const shown: string[] = [];
  const present = new Set(active);
  for (const name of input.hidden) {
    if (present.has(name) || hidden.has(name)) continue;
    if (visible(name)) {
      active.push(name);
      present.add(name);
      shown.push(name);
    } else hidden.add(name);
  }
  return { active, changed: hid.length > 0 || shown.length > 0, hidden, shown, hid };
}

export function sameToolSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((n) => set.has(n));
}

/** The error Pi's agent loop returns for a call to a tool that is not in the request's tool list. */
export function unknownToolText(tool: string): string {
  return `Tool ${tool} not found`;
}

export interface ToolResultLike {
  role?: string;
  toolName?: string;
  isError?: boolean;
  content?: unknown;
}

/**
 * A surfacing miss: the model called a tool surfacing had hidden, and Pi answered with its unknown-tool
 * error. Returns the tool's name.
 */
export function detectMiss(message: ToolResultLike, hidden: ReadonlySet<string>): string | undefined {
  if (message.role !== "toolResult" || !message.isError || typeof message.toolName !== "string") return undefined;
  if (!hidden.has(message.toolName)) return undefined;
  const content = message.content;
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content
            .map((b) =>
              b && typeof b === "object" && (b as { type?: string }).type === "text"
                ? (b as { text?: string }).text
                : "",
            )
            .join("")
        : "";
  return text.trim() === unknownToolText(message.toolName) ? message.toolName : undefined;
}
