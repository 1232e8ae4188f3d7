// Pieces of Pi messages that many tests build by hand.

/** Usage of a faux assistant reply: one token in, one out, nothing billed. */
export const FAUX_USAGE = {
  input: 1,
  output: 1,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** Usage of a reply that reported no tokens at all. */
export const NO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};

/** The text parts of a message's content, one a line; a string content as it is. */
export const contentText = (content: unknown): string =>
  Array.isArray(content)
    ? content
        .filter((b) => b?.type === "text")
        .map((b) => b.text)
        .join("\n")
    : String(content ?? "");
