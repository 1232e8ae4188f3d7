// What a classifier server can send back, through both paths of the HTTP bridge (the HTTP thread and the
// ordinary fetch used while it boots): pi-ai's real System One client must turn every odd answer into an
// error result. Before the fix, a status outside 200-599 or a reason phrase with a character above 0xFF
// threw from the thread's message listener (uncaught: it killed Pi), and bodies had no size limit.
import { createServer, type Server } from "node:net";
import { gzipSync } from "node:zlib";
import type { ClassifierContext } from "@earendil-works/pi-ai";
import { classify } from "@earendil-works/pi-ai/api/typesafe-system-one";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createThreadFetch, type ThreadFetch } from "../../../../src/main/platform/thread-fetch.ts";
import { MAX_ANSWER_BYTES } from "../../../../src/workers/http/http-protocol.ts";
import { loopbackModel } from "../../../kit/hook.ts";

const ANSWER = JSON.stringify({ answers: { a: { type: "noul", noul: 0.1 } }, usage: { input_tokens: 3 } });

/** Raw HTTP answers by path: status line, extra headers, body. */
const RAW: Record<string, { status: Buffer | string; headers?: string; body?: Buffer | string; cut?: boolean }> = {
  s999: { status: "HTTP/1.1 999 Weird" },
  s600: { status: "HTTP/1.1 600 Too Far" },
  s000: { status: "HTTP/1.1 000 Zero" },
  s150: { status: "HTTP/1.1 150 Informational" },
  utf8: { status: Buffer.from("HTTP/1.1 503 Service indisponible — réessayez", "utf8") },
  latin1: { status: Buffer.from("HTTP/1.1 503 Service indisponible réessayez", "latin1") },
  control: { status: "HTTP/1.1 503 Bad\x07bell" },
  okOddPhrase: { status: Buffer.from("HTTP/1.1 200 D’accord — ok", "utf8"), body: ANSWER },
  huge: { status: "HTTP/1.1 200 OK", body: Buffer.alloc(MAX_ANSWER_BYTES + 1024, 0x20) },
  bomb: {
    status: "HTTP/1.1 200 OK",
    headers: "content-encoding: gzip\r\n",
    body: gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20)),
  },
  truncated: { status: "HTTP/1.1 200 OK", body: '{"answers": {"a": {"type": "no', cut: true },
};

let server: Server;
let baseUrl: string;
const threads: ThreadFetch[] = [];

beforeAll(async () => {
  server = createServer((socket) => {
    socket.on("error", () => {});
    let head = "";
    socket.on("data", (d) => {
      head += d.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (head.length - end - 4 < length) return;
      const key = (head.split(" ")[1] ?? "").split("/")[1] ?? "";
      const raw = RAW[key] ?? RAW.s999;
      if (!raw) return;
      const body = Buffer.isBuffer(raw.body) ? raw.body : Buffer.from(raw.body ?? '{"error":"odd"}');
      const framing = raw.cut ? "transfer-encoding: chunked\r\n" : `content-length: ${body.length}\r\n`;
      socket.write(Buffer.isBuffer(raw.status) ? raw.status : Buffer.from(raw.status, "latin1"));
      socket.write(`\r\ncontent-type: application/json\r\n${raw.headers ?? ""}${framing}connection: close\r\n\r\n`);
      if (raw.cut) {
        socket.write(`${body.length.toString(16)}\r\n`);
        socket.write(body);
        socket.destroy();
      } else socket.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(async () => {
  await Promise.all(threads.map((t) => t.close()));
  await new Promise((resolve) => server.close(resolve));
});

const context = {
  state: { x: "y" },
  questions: { a: { type: "bool", instructions: "Needed?", criteria: { true: "yes", false: "no" } } },
} as unknown as ClassifierContext;

async function readyThread(): Promise<ThreadFetch> {
  const tf = createThreadFetch();
  threads.push(tf);
  tf.start();
  while (!tf.ready) await new Promise((r) => setTimeout(r, 10));
  expect(tf.ready).toBe(true);
  return tf;
}

const uncaught: unknown[] = [];
const onUncaught = (e: unknown) => uncaught.push(e);

describe.each([
  ["the HTTP thread", true],
  ["the ordinary fetch (thread not up yet)", false],
])("odd classifier answers through %s", (_name, threaded) => {
  let fetch: typeof globalThis.fetch;
  beforeAll(async () => {
    fetch = threaded ? (await readyThread()).fetch : createThreadFetch().fetch;
  });

  const ask = (path: string) =>
    classify(loopbackModel(`${baseUrl}/${path}`), context, { apiKey: "k", maxRetries: 0, fetch });

  it.each(["s999", "s600", "s000", "s150", "utf8", "latin1", "control", "huge", "bomb", "truncated"])(
    "%s ends as an error result, and nothing is thrown outside the call",
    async (path) => {
      process.on("uncaughtException", onUncaught);
      process.on("unhandledRejection", onUncaught);
      try {
        const result = await ask(path);
        expect(result.stopReason).toBe("error");
        expect(result.errorMessage).toBeTruthy();
        if (path === "huge" || path === "bomb") expect(result.errorMessage).toMatch(/larger than 4 MiB/);
        await new Promise((r) => setTimeout(r, 20));
        expect(uncaught).toEqual([]);
      } finally {
        process.off("uncaughtException", onUncaught);
        process.off("unhandledRejection", onUncaught);
      }
    },
  );

  it("reads an answer whose reason phrase a Response refuses (the phrase is dropped)", async () => {
    const result = await ask("okOddPhrase");
    expect(result.stopReason).toBe("stop");
    expect(result.answers.a).toEqual({ type: "bool", probability: 0.1 });
  });
});
