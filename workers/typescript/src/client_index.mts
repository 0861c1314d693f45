/**
 * The ECMAScript-module entry of `tasker-workflows-client` (`import { Client } from
 * "tasker-workflows-client"`): it re-exports the CommonJS entry, as index.mts does for the worker
 * package, so both module systems share one module instance.
 */
export * from "./client_index.js";
