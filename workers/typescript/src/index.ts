/**
 * Tasker step handlers in TypeScript. Register handlers, then run them with the
 * `tasker-worker` command (or {@link Worker} from code); the Rust core does all the I/O.
 */
export { ParentResults, type StepContext } from "./context";
export { PermanentError, ReferenceUnavailable, isPermanent } from "./errors";
export {
  Handler,
  Registry,
  defaultRegistry,
  registerHandler,
  type HandlerClass,
  type HandlerFn,
  type HandlerResult,
} from "./handler";
export type { JsonObject, JsonValue } from "./json";
export type { Outcome, StepError } from "./outcome";
export { Worker, type WorkerOptions } from "./worker";
