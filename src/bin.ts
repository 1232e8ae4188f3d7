#!/usr/bin/env node
// The `context-guard` command's entry. It checks the Node version before anything else is loaded: the
// CLI's own modules use APIs of Node 22 (as Pi does), and on an older Node they fail while loading, with
// an error that does not say why.
import { nodeProblem } from "./core/shared/node-version.ts";

const problem = nodeProblem(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 1;
} else {
  // The compiled CLI (a package), or its source (a checkout run with Node's type stripping).
  await import(import.meta.url.endsWith(".js") ? "./cli.js" : "./cli.ts");
}
