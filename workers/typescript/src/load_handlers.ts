import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** Imports a handler file (relative to the current directory) or an installed package: what
 * `tasker-worker-node --handlers` and the testing module's `main` load. */
export async function loadHandlers(spec: string): Promise<void> {
  const isPath = spec.startsWith(".") || path.isAbsolute(spec) || /\.[cm]?js$/.test(spec);
  const file = isPath
    ? path.resolve(spec)
    : createRequire(path.join(process.cwd(), "noop.js")).resolve(spec);
  await import(pathToFileURL(file).href);
}
