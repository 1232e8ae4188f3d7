// The classifier's fetch, watched for a server that says when to come back.
import { type Breaker, retryAfterMs } from "../../core/classifier/breaker.ts";

/**
 * The HTTP fetch, watched for 429 and 503 answers: a server that says when to come back gets no request
 * from a pass before then.
 */
export function watchRetryAfter(fetch: typeof globalThis.fetch, breaker: Breaker): typeof globalThis.fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (response.status === 429 || response.status === 503) {
      const now = Date.now();
      const ms = retryAfterMs(response.headers.get("retry-after"), response.headers.get("retry-after-ms"), now);
      if (ms !== undefined) breaker.holdOff(now, ms, `HTTP ${response.status}`);
    }
    return response;
  }) as typeof globalThis.fetch;
}
