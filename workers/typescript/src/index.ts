/**
 * Tasker step handlers in TypeScript. Register handlers, then run them with the
 * `tasker-worker-node` command (or {@link Worker} from code); the Rust core does all the I/O.
 * Apps submit, wait for and repair tasks with {@link Client}.
 */
export {
  Client,
  type ClientOptions,
  type CreateTaskOptions,
  type CreateTaskRequest,
  type PurgeOptions,
  type RepairNote,
  type RetryOptions,
  type ScheduleDefinition,
  type SignalOptions,
  type TaskQuery,
  type TaskRef,
} from "./client";
export {
  ApiError,
  AuthError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  ServerError,
  TaskPurgedError,
  TaskerClientError,
} from "./client_errors";
export { ParentResults, type StepContext } from "./context";
export {
  PermanentError,
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
export type { JsonObject, JsonValue } from "./json";
export type { Outcome, StepError } from "./outcome";
export {
  isTerminal,
  type BackfillResult,
  type BatchCreated,
  type BatchItemError,
  type BatchItemResult,
  type BatchItemStatus,
  type ConcurrencyLimit,
  type OverlapPolicy,
  type PurgeResult,
  type PurgeState,
  type RateLimit,
  type RetentionPolicy,
  type Schedule,
  type Signal,
  type Step,
  type StepChild,
  type StepConcurrencyLimit,
  type StepLimits,
  type StepPage,
  type StepRateLimit,
  type StepState,
  type StepThrottle,
  type StepWait,
  type Task,
  type TaskChild,
  type TaskFailure,
  type TaskPage,
  type TaskPriority,
  type TaskState,
  type Transition,
  type WorkerInfo,
} from "./task";
export { Worker, type Logger, type WorkerOptions } from "./worker";
