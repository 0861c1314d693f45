/**
 * The ECMAScript-module entry of `tasker-workflows` (`import { registerHandler } from
 * "tasker-workflows"`). The package is CommonJS (its napi loader, index.js, is), so this only
 * re-exports the CommonJS entry: ESM and CommonJS code share one module instance, and a handler
 * file written as ESM registers in the same registry as the `tasker-worker-node` command reads.
 */
export * from "./index.js";
