// Which names hold a credential's value (`MASTER_KEY`, `encryption_key`, `"pass"`, `X-Api-Key`), for
// credentials.ts: the name a value is assigned to is what tells a key from an id.

import { hasFileExtension } from "./tokens.ts";

/** Parts that make any name a credential's (`PGPASSWORD`, `client_secret_value`). */
export const STRONG_PART = /password|passwd|passphrase|secret|credential|apikey|privatekey|accesskey|authtoken/;
/** Last parts that make a name a credential's (`MASTER_KEY`, `access_token`, `db.pass`). */
const WEAK_LAST = new Set([
  "pass",
  "pwd",
  "pw",
  "token",
  "key",
  "auth",
  "authorization",
  "cookie",
  "sig",
  "signature",
  "salt",
  "pat",
  "jwt",
  "bearer",
  "creds",
]);
/** Last parts that name something about a credential, not its value (`SECRET_NAME`, `KMS_KEY_ID`, `password_file`). */
const NOT_VALUE_LAST = new Set([
  "id",
  "ids",
  "name",
  "names",
  "file",
  "path",
  "dir",
  "url",
  "uri",
  "type",
  "length",
  "len",
  "count",
  "size",
  "ttl",
  "expiry",
  "expires",
  "env",
  "ref",
  "hint",
  "policy",
  "mode",
  "format",
  "version",
  "header",
  "field",
  "prefix",
  "store",
  "provider",
  "region",
  "arn",
  "enabled",
  "required",
  "rotation",
]);
/** Keys that are not keys to anything (`primary_key`, `sort_key`, `cacheKey`). */
const PLAIN_KEY = new Set([
  "primary",
  "foreign",
  "sort",
  "partition",
  "cache",
  "public",
  "pub",
  "hot",
  "shortcut",
  "unique",
  "index",
  "lookup",
  "map",
  "row",
  "hash",
  "range",
  "composite",
  "idempotency",
  "dedup",
  "group",
  "routing",
  "object",
  "i18n",
  "translation",
  "react",
  "list",
  "order",
]);

const nameMemo = new Map<string, boolean>();

/** Whether a name (`MASTER_KEY`, `encryption_key`, `"pass"`, `api-key`, `X-Api-Key`) holds a credential. */
export function isCredentialName(name: string): boolean {
  let known = nameMemo.get(name);
  if (known === undefined) {
    // Names repeat (every object of a JSON array has the same keys); the memo is dropped when it grows.
    if (nameMemo.size >= 10_000) nameMemo.clear();
    known = judgeName(name);
    nameMemo.set(name, known);
  }
  return known;
}

function judgeName(name: string): boolean {
  // A file's name (`env-api-keys.d.ts.map:1:`, `secrets.json:`) in grep output or a listing.
  if (name.split(".").some((part, i) => i > 0 && hasFileExtension(`x.${part}`))) return false;
  const parts = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((p) => p !== "");
  const last = parts[parts.length - 1];
  if (last === undefined || NOT_VALUE_LAST.has(last)) return false;
  if (STRONG_PART.test(parts.join(""))) return true;
  if (!WEAK_LAST.has(last)) return false;
  return !(last === "key" && parts.length > 1 && PLAIN_KEY.has(parts[parts.length - 2] as string));
}
