// The credentials the classifier's requests carry, as Pi resolves them, for core/shared/redact.ts.
//
// Pi's registry resolves them the way it does for the request itself: `getApiKeyAndHeaders(model)` gives
// the key the client sends as `Authorization: Bearer …` and every header that applies to the model's
// requests (the provider's `headers` and the model's, from models.json or an extension, with `$ENV`,
// `${ENV}` and `!command` values already resolved), and `getProviderAuth(provider)` the provider's
// credential with its own headers. The model's built-in `headers` are added too. Every value counts as a
// secret: a header that was not one only costs a `[redacted]` in an error text.
//
// What was collected is also remembered for the process (`knownSecrets()`), so that writers that do not
// see the registry (telemetry, notices) cut the same values.
import type { Api, ClassifierApi, ClassifierModel, Model } from "@earendil-works/pi-ai";
import type { ModelRegistry } from "@earendil-works/pi-coding-agent";
import { redact, type SecretSet, type Secrets, secretSet } from "../../core/shared/redact.ts";

type Registry = Pick<ModelRegistry, "getApiKeyAndHeaders" | "getProviderAuth" | "getApiKeyForProvider">;

function headerValues(headers: unknown): string[] {
  if (!headers || typeof headers !== "object") return [];
  return Object.values(headers as Record<string, unknown>).filter((v): v is string => typeof v === "string");
}

function envValues(env: unknown): string[] {
  return headerValues(env);
}

/**
 * Every credential value of the classifier's provider and every header value of its requests, resolved
 * by Pi. Never rejects: a credential that cannot be resolved now (a failing `!command`) is left out.
 * Given only `{provider}` (a model not in the catalog), the provider's credential and headers.
 */
export async function classifierSecretValues(
  registry: Registry,
  model: ClassifierModel<ClassifierApi> | Model<Api> | { provider: string; headers?: undefined },
): Promise<string[]> {
  const out: string[] = [...headerValues(model.headers)];
  const full = "id" in model ? (model as Model<Api>) : undefined;
  const [request, provider, key] = await Promise.all([
    // The model's own request resolution (provider and model headers); a bare provider has only the rest.
    // swallow-ok: a credential Pi cannot resolve is one fewer to cut out.
    full ? registry.getApiKeyAndHeaders(full).catch(() => undefined) : undefined,
    registry.getProviderAuth(model.provider).catch(() => undefined),
    registry.getApiKeyForProvider(model.provider).catch(() => undefined),
  ]);
  if (request?.ok) {
    if (request.apiKey) out.push(request.apiKey);
    out.push(...headerValues(request.headers), ...envValues(request.env));
  }
  if (provider) {
    if (provider.auth.apiKey) out.push(provider.auth.apiKey);
    out.push(...headerValues(provider.auth.headers), ...envValues(provider.env));
  }
  if (key) out.push(key);
  const unique = [...new Set(out.filter((v) => v !== ""))];
  rememberSecrets(unique);
  return unique;
}

/** {@link classifierSecretValues}, compiled for redaction. */
export async function classifierSecrets(
  registry: Registry,
  model: ClassifierModel<ClassifierApi> | Model<Api>,
): Promise<SecretSet> {
  return secretSet(await classifierSecretValues(registry, model));
}

// ---------------------------------------------------------------------------------------------------
// The process's known secrets

/** Distinct values kept (a rotating OAuth token adds one per refresh; the oldest go first). */
const MAX_KNOWN = 64;
const known: string[] = [];
let compiled: SecretSet | undefined;

/** Adds values to the process's known secrets. */
function rememberSecrets(values: Iterable<string | null | undefined>): void {
  let changed = false;
  for (const value of values) {
    if (typeof value !== "string" || value === "" || known.includes(value)) continue;
    known.push(value);
    changed = true;
  }
  if (!changed) return;
  if (known.length > MAX_KNOWN) known.splice(0, known.length - MAX_KNOWN);
  compiled = undefined;
}

/** Every secret collected so far in this process, compiled. */
export function knownSecrets(): SecretSet {
  compiled ??= secretSet(known);
  return compiled;
}

/** Forgets the known secrets (tests). */
export function forgetSecrets(): void {
  known.length = 0;
  compiled = undefined;
}

/** {@link redact} with the known secrets (plus `extra`), for writers that have no registry at hand. */
export function redactKnown(text: string, extra?: Secrets): string {
  return redact(extra ? redact(text, extra) : text, knownSecrets());
}
