// Runs the loopback classifier (loopback-classifier.ts) in its own worker thread and controls it by
// message. In Pi the classifier is a remote service: only the client side (pi-ai's request building,
// fetch and response parsing) belongs on the measured main thread.
import { Worker } from "node:worker_threads";
import type { HostCommand, HostSettings } from "./loopback-worker.ts";

export interface LoopbackHost {
  baseUrl: string;
  set(settings: HostSettings): Promise<void>;
  /** Requests received since the previous call. */
  takeCount(): Promise<number>;
  close(): Promise<void>;
}

type Command = HostCommand extends infer C ? (C extends { id: number } ? Omit<C, "id"> : never) : never;

export async function startLoopbackHost(settings: HostSettings): Promise<LoopbackHost> {
  const worker = new Worker(new URL("./loopback-worker.ts", import.meta.url), {
    workerData: settings,
    execArgv: [...process.execArgv, "--disable-warning=ExperimentalWarning"],
  });
  const pending = new Map<number, (value: { count?: number }) => void>();
  let nextId = 1;
  const baseUrl = await new Promise<string>((resolve, reject) => {
    worker.once("error", reject);
    worker.on("message", (m: { type?: string; baseUrl?: string; id?: number; count?: number }) => {
      if (m.type === "ready") resolve(m.baseUrl as string);
      else if (m.id !== undefined) {
        pending.get(m.id)?.(m);
        pending.delete(m.id);
      }
    });
  });
  const send = (cmd: Command) =>
    new Promise<{ count?: number }>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      worker.postMessage({ ...cmd, id });
    });
  return {
    baseUrl,
    async set(s) {
      await send({ type: "set", settings: s });
    },
    async takeCount() {
      return (await send({ type: "count" })).count ?? 0;
    },
    async close() {
      await send({ type: "close" });
      await worker.terminate();
    },
  };
}
