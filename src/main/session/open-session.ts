// A session's resources opened as Pi runs it; tests and the replay hand their own parts to SessionGuard.
import { createTaskRunner } from "../platform/pool.ts";
import { loadSettings } from "../platform/settings.ts";
import { createThreadFetch } from "../platform/thread-fetch.ts";
import type { RoutingPi } from "../routing/session-routing.ts";
import { SessionGuard } from "./session-guard.ts";

/** Opens a session's resources as Pi runs it: the settings file, both pools and the (idle) HTTP bridge. */
export async function openSessionGuard(pi: RoutingPi, turnEndHook?: (on: boolean) => void): Promise<SessionGuard> {
  const settings = await loadSettings();
  const passRunner = await createTaskRunner({ minThreads: 1, maxThreads: 1 });
  const recallRunner = await createTaskRunner({ minThreads: 0, maxThreads: 1, idleTimeoutMs: 10_000 });
  return new SessionGuard({
    settings,
    passRunner,
    recallRunner,
    http: createThreadFetch(),
    pi,
    ...(turnEndHook ? { turnEndHook } : {}),
  });
}
