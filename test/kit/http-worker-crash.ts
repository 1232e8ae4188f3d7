// An HTTP worker entry that loads, says it is ready, and ends its thread on the first request.
import { parentPort } from "node:worker_threads";

parentPort?.on("message", () => process.exit(7));
parentPort?.postMessage({ ready: true });
