// The Node version Pi and this package need, checked before anything that uses newer APIs is loaded.
const REQUIRED_NODE: readonly [number, number] = [22, 19];

/** Why `version` (e.g. process.versions.node) cannot run the package, or undefined when it can. */
export function nodeProblem(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split(".").map((n) => Number.parseInt(n, 10));
  if (major > REQUIRED_NODE[0] || (major === REQUIRED_NODE[0] && minor >= REQUIRED_NODE[1])) return undefined;
  return (
    `context-guard needs Node ${REQUIRED_NODE.join(".")} or newer (as Pi does); this is Node ${version}. ` +
    "In a clone, `npx context-guard …` runs it with the Node 22 that `npm install` brought; otherwise install Node 22."
  );
}
