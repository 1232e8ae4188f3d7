// Strings read from a session (model names, file names, labels, parse errors quoting a line) can hold
// terminal control sequences: an ESC or OSC 52 would move the cursor, retitle the window or set the
// clipboard when printed, and a bidi override would show text in an order other than the one it has.
// These are shown as visible escapes instead.

// C0 except tab and newline, DEL, C1, the bidi embeddings, overrides and isolates, and the line and
// paragraph separators some terminals treat as breaks.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function visible(c: string): string {
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** The text with every control character shown as `\xNN` or `\uNNNN`; tabs and newlines stay. */
export function escapeControls(text: string): string {
  return text.replace(CONTROL, visible);
}
