/**
 * Headless Chromium screenshots of local HTML files (Debian's `chromium` package), for checking that
 * the replay report renders. Nothing is fetched: the report is self-contained and networking is off.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

export const CHROMIUM = "/usr/bin/chromium";

export function hasChromium(): boolean {
  return existsSync(CHROMIUM);
}

export interface ScreenshotOptions {
  width?: number;
  height?: number;
  timeoutMs?: number;
}

/** Renders `html` (a file path) to `png` at the window size; resolves with the PNG's pixel size. */
export async function screenshot(
  html: string,
  png: string,
  options: ScreenshotOptions = {},
): Promise<{ width: number; height: number; bytes: number }> {
  const width = options.width ?? 1280;
  const height = options.height ?? 1600;
  const profile = await mkdtemp(join(tmpdir(), "cg-chromium-"));
  try {
    await run(
      CHROMIUM,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        `--user-data-dir=${profile}`,
        `--screenshot=${png}`,
        `--window-size=${width},${height}`,
        pathToFileURL(html).href,
      ],
      { timeout: options.timeoutMs ?? 60_000 },
    );
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
  return pngSize(await readFile(png));
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(bytes: Buffer): { width: number; height: number; bytes: number } {
  const signature = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length < 24 || !signature.every((b, i) => bytes[i] === b)) throw new Error("not a PNG");
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20), bytes: bytes.length };
}
