/**
 * Replays the sample session with the embedded classifier, writes the report and takes a headless
 * Chromium screenshot of it: the picture at the top of the README.
 *
 *   npm run report:screenshot                       # → context-guard-report.html, docs/report.png
 *   node bench/screenshot-report.ts --html r.html --png /tmp/r.png --height 3000
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { hasChromium, screenshot } from "./lib/chromium.ts";

const { values } = parseArgs({
  options: {
    session: { type: "string", default: "bench/sample/session.jsonl" },
    html: { type: "string", default: "context-guard-report.html" },
    png: { type: "string", default: "docs/report.png" },
    width: { type: "string", default: "1280" },
    height: { type: "string", default: "1600" },
    "no-replay": { type: "boolean", default: false },
  },
});

if (!hasChromium()) {
  console.error("chromium is not installed (Debian: apt-get install chromium)");
  process.exit(2);
}
if (!values["no-replay"]) {
  const { stdout } = await promisify(execFile)(process.execPath, [
    "src/cli.ts",
    "replay",
    values.session,
    "--model",
    "local/lexical",
    "--out",
    values.html,
    "--no-progress",
  ]);
  process.stdout.write(stdout);
}
const size = await screenshot(values.html, values.png, {
  width: Number(values.width),
  height: Number(values.height),
});
console.log(`${values.png}: ${size.width}×${size.height}, ${(size.bytes / 1024).toFixed(0)} KB`);
