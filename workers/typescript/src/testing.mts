/** The ECMAScript-module entry of `tasker-workflows/testing`: re-exports the CommonJS one. */
export * from "./testing.js";
