/**
 * Tasker step handlers in TypeScript. Register handlers, then run them with the
 * `tasker-worker-node` command (or {@link Worker} from code); the Rust core does all the I/O.
 * Apps submit, wait for and repair tasks with {@link Client} (client_index.ts, which is also the
 * client-only package, `tasker-workflows-client`).
 */
export * from "./client_index";
export { ParentResults, type StepContext } from "./context";
export {
  PermanentError,
  StreamError,
  ReferenceUnavailable,
  RetryableError,
  isPermanent,
  type HandlerErrorOptions,
  type RetryableErrorOptions,
} from "./errors";
export {
  Handler,
  Registry,
  defaultRegistry,
  registerHandler,
  type HandlerClass,
  type HandlerFn,
  type HandlerResult,
} from "./handler";
export type { Outcome, StepError } from "./outcome";
export { jsonLogger, type LogRecord, type Logger } from "./logs";
export { Worker, type WorkerOptions } from "./worker";
