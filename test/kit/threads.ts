import { readdirSync, readFileSync } from "node:fs";

/**
 * Threads of this process, less libuv's pool: it grows on first use (file reads, DNS) up to 4 and never
 * shrinks, so it would count as a leak of whatever test first used it.
 */
export const threads = (): number =>
  readdirSync("/proc/self/task").filter((t) => {
    try {
      return readFileSync(`/proc/self/task/${t}/comm`, "utf8").trim() !== "libuv-worker";
    } catch {
      return false; // the thread ended meanwhile
    }
  }).length;
