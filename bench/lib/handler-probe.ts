// Times every handler an extension registers: the time until each call returns (for an async handler,
// its first synchronous stretch), which is the time it holds Pi's thread at that event. Wall time: Linux
// accounts a thread's CPU time too coarsely for a call of a fraction of a millisecond, so on a loaded
// machine the longest calls include waits for a core. The extension is loaded inline through a copy of
// Pi's API whose `on` wraps the handler; everything else is Pi's own.
import type { ExtensionAPI, InlineExtension } from "@earendil-works/pi-coding-agent";

export interface TimedExtension {
  extension: InlineExtension;
  /** Milliseconds per call, by event, while `recording`. */
  readonly windows: Map<string, number[]>;
  recording: boolean;
}

export function timedExtension(factory: (pi: ExtensionAPI) => void): TimedExtension {
  const timed: TimedExtension = {
    windows: new Map(),
    recording: false,
    extension: (pi) => {
      const on = pi.on.bind(pi) as (event: string, handler: (...args: unknown[]) => unknown) => unknown;
      const api = new Proxy(pi, {
        get(target, prop, receiver) {
          if (prop !== "on") return Reflect.get(target, prop, receiver);
          return (event: string, handler: (...args: unknown[]) => unknown) =>
            on(event, (...args: unknown[]) => {
              if (!timed.recording) return handler(...args);
              const start = performance.now();
              try {
                return handler(...args);
              } finally {
                const list = timed.windows.get(event) ?? [];
                list.push(performance.now() - start);
                timed.windows.set(event, list);
              }
            });
        },
      });
      factory(api);
    },
  };
  return timed;
}
