// The extension as the library's default export. Pi's runtime loads on the first call, not on import:
// a library user who only runs passes never pays for it, and needs no Pi installed to import the package.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

/** The Pi extension (the same as `pi-context-guard/extension`); Pi awaits an async factory. */
export default async function contextGuard(pi: ExtensionAPI): Promise<void> {
  const { default: extension } = await import("./index.ts");
  extension(pi);
}
