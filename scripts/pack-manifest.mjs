// Runs around `npm pack` / `npm publish` (prepack: strip, postpack: restore). The packed package.json
// carries only what an installed package needs: no scripts (`prepare` builds dist/ in a clone, and npm
// warns about it when `pi install` installs the tarball; the others name files that are not packed), no
// devDependencies and no allowScripts (both read only in the checkout).
import { readFileSync, renameSync, writeFileSync } from "node:fs";

const MANIFEST = "package.json";
const KEPT = "package.json.pack-backup";

if (process.argv[2] === "strip") {
  const text = readFileSync(MANIFEST, "utf8");
  const manifest = JSON.parse(text);
  writeFileSync(KEPT, text);
  delete manifest.scripts;
  delete manifest.devDependencies;
  delete manifest.allowScripts;
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (process.argv[2] === "restore") {
  renameSync(KEPT, MANIFEST);
} else {
  process.stderr.write("usage: pack-manifest.mjs strip|restore\n");
  process.exitCode = 2;
}
