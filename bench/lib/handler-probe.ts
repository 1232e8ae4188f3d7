// Times every handler an extension registers: the thread's CPU time until each call returns (for an async
// handler, its first synchronous stretch), which is what it costs Pi's thread at that event. CPU time, not
// wall time: on a loaded machine a call can wait for a core for tens of milliseconds. The extension is
// loaded inline through a copy of Pi's API whose `on` wraps the handler; everything else is Pi's own.
import type { ExtensionAPI, InlineExtension } from "@earendil-works/pi-coding-agent";

export interface TimedExtension {
  extension: InlineExtension;
  /** CPU milliseconds per call, by event, while `recording`. */
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
              const start = process.threadCpuUsage();
              try {
                return handler(...args);
              } finally {
                const used = process.threadCpuUsage(start);
                const list = timed.windows.get(event) ?? [];
                list.push((used.user + used.system) / 1000);
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
