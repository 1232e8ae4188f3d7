import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

let gcFn: (() => void) | undefined;

/** A full garbage collection, for tests that check what stays reachable (no --expose-gc needed). */
export function collectGarbage(): void {
  if (!gcFn) {
    setFlagsFromString("--expose-gc");
    gcFn = runInNewContext("gc") as () => void;
  }
  gcFn();
}
