// Pi's entry point for the installed package (package.json "pi.extensions"). It lives at the package
// root so Pi lists the extension under the package's name instead of the folder of the built file.
export { default } from "./dist/main/index.js";
