// A note is any text the guard puts in place of an entry's content (a stub, a distillation, the note on a
// recall result whose entry came back). Replacing content with something longer costs context and cache
// for nothing, so every note is chosen through here: the first candidate shorter than the content, or
// none (the content stays as it is).

/** The first of `candidates` shorter than the `originalChars` it would replace; undefined: make no edit. */
export function noteThatFits(originalChars: number, candidates: readonly string[]): string | undefined {
  return candidates.find((note) => note.length < originalChars);
}
