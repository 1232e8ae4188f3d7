// Credential redaction (issue 23, break 6): a server can echo any part of the key or of a configured
// header in its error body. core/shared/redact.ts cuts every fragment of 8+ characters of a secret, short
// values as whole tokens, and well-known shapes; every writer (records, telemetry, notices, the replay
// report) goes through it. These are the unit cases; test/e2e/secrets.test.ts runs the real Pi CLI.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClassifierResult } from "@earendil-works/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { buildRecord, summarizeRecord } from "../../../../src/core/records/record.ts";
import { MIN_FRAGMENT, REDACTED, redact, redactDeep, secretSet } from "../../../../src/core/shared/redact.ts";
import type { ClassifierRequest, GuardRecord } from "../../../../src/core/shared/types.ts";
import { piClassify } from "../../../../src/main/pass/classifier.ts";
import {
  classifierSecretValues,
  forgetSecrets,
  knownSecrets,
  redactKnown,
} from "../../../../src/main/platform/secrets.ts";
import { Telemetry } from "../../../../src/main/platform/telemetry.ts";

/** Not in a well-known key format: only knowing the actual key can cut it out of an echo. */
const KEY = "cgkey-7Qm2Xv9LpR4tZ8wN1bK6yH3sD5fJ0aE";
const HEADER = "tenant-HEADERSECRET-7f3a9c";

afterEach(() => forgetSecrets());

describe("redact", () => {
  it("cuts the whole key, given alone, in a list or compiled", () => {
    for (const secrets of [KEY, [KEY], secretSet([KEY]), secretSet(KEY)]) {
      expect(redact(`401: key ${KEY} is not valid`, secrets)).toBe(`401: key ${REDACTED} is not valid`);
    }
  });

  it("cuts the key's first 20 characters, as a server that echoes a prefix writes them", () => {
    const prefix = KEY.slice(0, 20);
    const out = redact(`System One API error (500): key ${prefix}… rejected`, [KEY]);
    expect(out).toBe(`System One API error (500): key ${REDACTED}… rejected`);
    expect(out).not.toContain(KEY.slice(0, MIN_FRAGMENT));
  });

  it("cuts a fragment from the middle of the key and its end, each on its own", () => {
    const middle = KEY.slice(9, 23);
    const tail = KEY.slice(-12);
    const out = redact(`seen ${middle} and …${tail}`, [KEY]);
    expect(out).toBe(`seen ${REDACTED} and …${REDACTED}`);
  });

  it("keeps a fragment shorter than 8 characters (documented: too short to be recognizable)", () => {
    const seven = KEY.slice(10, 17);
    expect(redact(`x ${seven} y`, [KEY])).toBe(`x ${seven} y`);
  });

  it("cuts header values, whole or in part, and their JSON-escaped and URL-encoded spellings", () => {
    const quoted = 'sig="a1b2c3d4e5f6"/v2';
    const secrets = secretSet([KEY, HEADER, quoted]);
    expect(redact(`headers {"x-cg-tenant":"${HEADER}"}`, secrets)).toBe(`headers {"x-cg-tenant":"${REDACTED}"}`);
    expect(redact(`tenant ${HEADER.slice(0, 14)}`, secrets)).toBe(`tenant ${REDACTED}`);
    expect(redact(`echo ${JSON.stringify({ h: quoted })}`, secrets)).toBe(`echo {"h":"${REDACTED}"}`);
    expect(redact(`url ?h=${encodeURIComponent(quoted)}`, secrets)).toBe(`url ?h=${REDACTED}`);
  });

  it("cuts a short value (4-7 characters) only where it stands whole, and skips values under 4", () => {
    const secrets = secretSet(["Zk9$q", "ab1"]);
    expect(redact("token Zk9$q rejected", secrets)).toBe(`token ${REDACTED} rejected`);
    expect(redact('{"t":"Zk9$q"}', secrets)).toBe(`{"t":"${REDACTED}"}`);
    // Inside a longer word it is not that value.
    expect(redact("xZk9$qy", secrets)).toBe("xZk9$qy");
    expect(redact("ab1 stays", secrets)).toBe("ab1 stays");
  });

  it("cuts overlapping and nested secrets as one piece, and two adjacent ones together", () => {
    const a = "alpha-0123456789";
    const b = "6789-omega-secret";
    const inner = "0123456789";
    const secrets = secretSet([a, b, inner]);
    // a's end and b's start overlap in the text: one cut over both.
    expect(redact("x alpha-0123456789-omega-secret y", secrets)).toBe(`x ${REDACTED} y`);
    expect(redact(`x ${a}${b} y`, secrets)).toBe(`x ${REDACTED} y`);
    expect(redact(`x ${inner} y`, secrets)).toBe(`x ${REDACTED} y`);
  });

  it("never leaves half of a surrogate pair", () => {
    // U+1F600 and U+1F200 share their low surrogate: a window that starts there matches in the middle
    // of U+1F200, and the cut takes the whole character.
    const secret = "\u{1F600}key-material-1234";
    const out = redact("a \u{1F200}key-material-1234 b", [secret]);
    expect(out).toBe(`a ${REDACTED} b`);
    expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it("still cuts well-known shapes without the secret, and leaves other text alone", () => {
    expect(redact("Authorization: Bearer abc.def-123 was refused")).toBe(
      `Authorization: Bearer ${REDACTED} was refused`,
    );
    expect(redact('{"key":"sk-or-v1-0123456789abcdef"}')).toBe(`{"key":"${REDACTED}"}`);
    const plain = "System One API error (500): internal error";
    expect(redact(plain, [KEY, HEADER])).toBe(plain);
    expect(redact("", [KEY])).toBe("");
  });

  it("scans a long text once, whatever the number of secrets", () => {
    const many = Array.from({ length: 200 }, (_, i) => `${KEY}-${i}`);
    const text = `${"lorem ipsum dolor ".repeat(20_000)}${KEY.slice(0, 20)}`;
    const out = redact(text, secretSet(many));
    expect(out.endsWith(REDACTED)).toBe(true);
    expect(out.length).toBe(text.length - 20 + REDACTED.length);
  });

  it("redactDeep cuts every string of a JSON value, keys included, and keeps the rest", () => {
    const value = { a: [`k ${KEY.slice(0, 20)}`, 3, null, true], [`h-${HEADER}`]: { b: HEADER }, n: 1.5 };
    expect(redactDeep(value, [KEY, HEADER])).toEqual({
      a: [`k ${REDACTED}`, 3, null, true],
      [`h-${REDACTED}`]: { b: REDACTED },
      n: 1.5,
    });
  });
});

describe("writers", () => {
  it("a record's labels, reasons and traces are cut, and /guard's lines of an older record too", () => {
    const trace = `error: System One API error (500): ${KEY.slice(0, 20)} ${HEADER}`;
    const record = buildRecord({
      phase: "run-end",
      model: "openrouter/~typesafe/jev-latest",
      results: [
        {
          entryId: "e1",
          label: `bash \`curl -H 'x-tenant: ${HEADER}'\``,
          outcome: "kept",
          reason: "error",
          beforeChars: 10,
          afterChars: 10,
          jev: [trace],
        },
      ],
      requests: 1,
      inputTokens: 0,
      costUsd: 0,
      ms: 1,
      timedOut: false,
      secrets: [KEY, HEADER],
    });
    const text = JSON.stringify(record);
    expect(text).not.toContain(KEY.slice(0, 20));
    expect(text).not.toContain(HEADER);
    expect(record.results[0]?.jev[0]).toBe(`error: System One API error (500): ${REDACTED} ${REDACTED}`);
    const older = { ...record, results: [{ ...record.results[0], jev: [trace] }] } as GuardRecord;
    const lines = summarizeRecord(older, [KEY, HEADER]).join("\n");
    expect(lines).not.toContain(KEY.slice(0, 20));
    expect(lines).not.toContain(HEADER.slice(0, 12));
  });

  it("telemetry cuts the known secrets out of every string of a line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-redact-"));
    try {
      const path = join(dir, "t.jsonl");
      const t = new Telemetry({
        getConfig: () => ({ telemetry: true, telemetryPath: path }),
        secrets: () => secretSet([KEY, HEADER]),
      });
      t.record({ type: "degraded", class: "failed", action: "static", detail: `${KEY.slice(0, 20)}/${HEADER}` });
      await t.flush();
      const line = await readFile(path, "utf8");
      expect(line).not.toContain(KEY.slice(0, 20));
      expect(line).not.toContain(HEADER);
      expect(JSON.parse(line).detail).toBe(`${REDACTED}/${REDACTED}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("piClassify cuts the key, its prefix and every header value Pi resolves for the model", async () => {
    const model = { provider: "openrouter", id: "~typesafe/jev-latest", headers: { "X-Builtin": "builtin-hdr-value" } };
    const result = (errorMessage: string): ClassifierResult =>
      ({ stopReason: "error", errorMessage, answers: {} }) as unknown as ClassifierResult;
    const echoes = [
      `System One API error (500): ${KEY.slice(0, 20)}`,
      `System One API error (500): ${HEADER} / builtin-hdr-value`,
      `System One API error (500): provider-only-${KEY.slice(-10)}`,
    ];
    let call = 0;
    const registry = {
      classify: async () => result(echoes[call++] as string),
      getApiKeyAndHeaders: async () => ({ ok: true, apiKey: KEY, headers: { "X-Cg-Tenant": HEADER } }),
      getProviderAuth: async () => ({
        auth: { apiKey: KEY, headers: { "X-Other": `provider-only-${KEY.slice(-10)}` } },
      }),
      getApiKeyForProvider: async () => KEY,
    };
    const classify = piClassify(registry as never, model as never);
    const request = { state: {}, questions: {} } as unknown as ClassifierRequest;
    const signal = new AbortController().signal;
    const errors: string[] = [];
    for (let i = 0; i < echoes.length; i++)
      errors.push((await classify(request, { signal, timeoutMs: 1000 })).error ?? "");
    expect(errors).toEqual([
      `System One API error (500): ${REDACTED}`,
      `System One API error (500): ${REDACTED} / ${REDACTED}`,
      `System One API error (500): ${REDACTED}`,
    ]);
    // What was collected is known to the writers that have no registry (telemetry, notices).
    expect(redactKnown(`n ${HEADER}`)).toBe(`n ${REDACTED}`);
    expect(knownSecrets().windows.size).toBeGreaterThan(0);
  });

  it("collecting never rejects: a credential Pi cannot resolve now is left out", async () => {
    const registry = {
      getApiKeyAndHeaders: async () => {
        throw new Error("command failed");
      },
      getProviderAuth: async () => {
        throw new Error("command failed");
      },
      getApiKeyForProvider: async () => undefined,
    };
    expect(await classifierSecretValues(registry as never, { provider: "openrouter", id: "m" } as never)).toEqual([]);
  });
});
