// npm's prepare step: builds dist/ in a clone (`npm install`) and before packing. Pi installs a git
// package with `npm install --omit=dev`, which leaves out the TypeScript compiler, so nothing can be
// built there: that install must fail with a reason, not load a package without its extension.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const tsc = "node_modules/typescript/bin/tsc";
if (!existsSync(tsc)) {
  process.stderr.write(
    "context-guard: cannot build the extension here: the TypeScript compiler (a dev dependency) is not " +
      "installed. Pi installs git packages without dev dependencies; install context-guard from a clone " +
      "(`npm install`, then `pi install <folder>`) or from a packed tarball instead (README, Install).\n",
  );
  process.exit(1);
}
const built = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
process.exit(built.status ?? 1);
