// Runs around `npm pack` / `npm publish` (prepack: strip, postpack: restore). The packed package.json
// must not carry `prepare` (it builds dist/ in a clone or a git install): npm warns about it when the
// tarball is installed as a dependency, as `pi install` does, although it never runs there.
import { readFileSync, renameSync, writeFileSync } from "node:fs";

const MANIFEST = "package.json";
const KEPT = "package.json.pack-backup";

if (process.argv[2] === "strip") {
  const text = readFileSync(MANIFEST, "utf8");
  const manifest = JSON.parse(text);
  writeFileSync(KEPT, text);
  delete manifest.scripts?.prepare;
  writeFileSync(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (process.argv[2] === "restore") {
  renameSync(KEPT, MANIFEST);
} else {
  process.stderr.write("usage: pack-manifest.mjs strip|restore\n");
  process.exitCode = 2;
}
