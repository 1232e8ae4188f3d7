// The classifier lookup as boundaries make it: finding the model walks every model of Pi's registry
// (hundreds for a gateway provider), and fast runs make a boundary many times a second. A model found
// is reused for a moment; its provider's credentials are checked on every call all the same.
import type { ClassifierApi, ClassifierModel } from "@earendil-works/pi-ai";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type ClassifierLookup, findClassifier } from "./classifier.ts";

type Registry = ExtensionContext["modelRegistry"];

/** How long a found model is reused: a registry change (a refresh, a new model file) shows after it. */
const REUSE_MS = 1000;

const found = new WeakMap<Registry, { ref: string; at: number; model: ClassifierModel<ClassifierApi> }>();

/** findClassifier, reusing the model found by the last call on this registry for `REUSE_MS`. */
export function lookupClassifier(registry: Registry, ref: string, now = performance.now()): ClassifierLookup {
  const hit = found.get(registry);
  if (hit && hit.ref === ref && now - hit.at >= 0 && now - hit.at < REUSE_MS) {
    if (registry.getProviderAuthStatus(hit.model.provider).configured) return { ok: true, model: hit.model, ref };
  }
  const lookup = findClassifier(registry, ref);
  if (lookup.ok && !lookup.local) found.set(registry, { ref, at: now, model: lookup.model });
  else found.delete(registry);
  return lookup;
}
