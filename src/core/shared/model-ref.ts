// A model named as `provider/id`, the way the config and the CLI name the classifier.

export interface ModelRef {
  provider: string;
  id: string;
}

/** Split `provider/id` at the first slash: `openrouter/~typesafe/jev-latest` → openrouter + ~typesafe/jev-latest. */
export function parseModelRef(ref: string): ModelRef | undefined {
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) return undefined;
  const provider = ref.slice(0, slash).trim();
  const id = ref.slice(slash + 1).trim();
  if (!provider || !id) return undefined;
  return { provider, id };
}
