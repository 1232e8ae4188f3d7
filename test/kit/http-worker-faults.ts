// Test-only entries for createThreadFetch({ entry }): HTTP worker threads that fail the ways a thread can.
import { fileURLToPath } from "node:url";

const here = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

/** A module that throws while loading: the thread fails before it is ready. */
export const BROKEN_HTTP_WORKER = here("http-worker-broken.ts");
/** Ready, then the thread exits on its first request. */
export const CRASHING_HTTP_WORKER = here("http-worker-crash.ts");
