// The messages between Pi's thread (src/main/platform/thread-fetch.ts) and the HTTP thread (http-worker.ts), and
// the reading of an answer's body that both sides share: an answer is read up to a cap, so a server that
// sends hundreds of megabytes (or a small gzip body that inflates to gigabytes) costs an error, not Pi's
// memory.

export type FetchRequest =
  | { type: "fetch"; id: number; url: string; method: string; headers: [string, string][]; body?: string }
  | { type: "abort"; id: number };

export type FetchReply =
  | {
      id: number;
      ok: true;
      status: number;
      statusText: string;
      headers: [string, string][];
      body: ArrayBuffer;
    }
  | { id: number; ok: false; name: string; message: string; cause?: string };

/** What the worker posts: its module has loaded, or the answer to one request. */
export type WorkerMessage = { ready: true } | FetchReply;

/**
 * Most bytes of one classifier answer, after decompression. A real answer to 40 questions is a few
 * kilobytes; anything near this is a broken or hostile server.
 */
export const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** Why an answer was refused: its body passed the cap. */
class AnswerTooLarge extends Error {
  override name = "AnswerTooLarge";
  constructor(limit: number) {
    super(`the classifier's answer is larger than ${Math.round(limit / 1024 / 1024)} MiB`);
  }
}

/**
 * The body of `response` as bytes, or AnswerTooLarge once more than `limit` bytes arrived (or the
 * declared length says they would). Stops reading, and cancels the stream, as soon as the cap is passed.
 */
export async function readCapped(response: Response, limit = MAX_ANSWER_BYTES): Promise<ArrayBuffer> {
  const declared = Number(response.headers.get("content-length"));
  const encoded = (response.headers.get("content-encoding") ?? "identity") !== "identity";
  // A compressed body's length says nothing about the inflated size, but it cannot be larger than it.
  if (Number.isFinite(declared) && declared > limit && !encoded) {
    // swallow-ok: the answer is refused either way; a stream that will not cancel changes nothing.
    await response.body?.cancel().catch(() => undefined);
    throw new AnswerTooLarge(limit);
  }
  if (!response.body) return new ArrayBuffer(0);
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // swallow-ok: the answer is refused either way; a stream that will not cancel changes nothing.
      await reader.cancel().catch(() => undefined);
      throw new AnswerTooLarge(limit);
    }
    parts.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out.buffer;
}

/** HTTP statuses a Response can be built with (the constructor throws a RangeError for others). */
export const validStatus = (status: number): boolean => Number.isInteger(status) && status >= 200 && status <= 599;

/**
 * A reason phrase the Response constructor accepts (tab, printable ASCII, obs-text up to 0xFF), or ""
 * when the server sent anything else: the phrase carries no meaning the client uses.
 */
export const safeStatusText = (text: string): string => (/^[\t\x20-\x7e\x80-\xff]*$/.test(text) ? text : "");
