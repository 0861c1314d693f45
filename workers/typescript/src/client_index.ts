/**
 * The API client alone: the entry of the client-only package, `tasker-workflows-client`, and the
 * client half of `tasker-workflows` (index.ts re-exports it). Nothing here reaches the napi
 * loader or the native library: `workers/typescript/package.sh --client` compiles this file and
 * what it imports, and fails if that includes either.
 */
export {
  AlertMethods,
  type Alert,
  type AlertCondition,
  type AlertKind,
  type AlertRule,
  type AlertRuleCondition,
  type AlertSink,
} from "./alerts";
export type { AuditEntry, AuditPage, AuditQuery } from "./audit";
export { Client } from "./client";
export type {
  ClientOptions,
  CreateTaskOptions,
  CreateTaskRequest,
  PurgeOptions,
  RepairNote,
  RetryOptions,
  ScheduleDefinition,
  SignalOptions,
  TaskQuery,
  TaskRef,
} from "./client_options";
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
export type { JsonObject, JsonValue } from "./json";
export { TaskCountMethods, type TaskCountQuery } from "./counts";
export { StepInputMethods, type StepInputs } from "./step_inputs";
export { ClockMethods, type Clock, type Skipped } from "./clock";
export {
  EventMethods,
  type Event,
  type EventItem,
  type EventPage,
  type EventQuery,
  type EventRef,
  type EventStart,
  type EventsSent,
  type SendEventOptions,
  type SendEventRequest,
} from "./events";
export {
  OperationMethods,
  isFinished,
  type Operation,
  type OperationAction,
  type OperationCount,
  type OperationFilter,
  type OperationList,
  type OperationRef,
  type OperationState,
  type StartOperationRequest,
} from "./operations";
export {
  StreamMethods,
  type ReadStreamOptions,
  type StreamChunk,
  type StreamOptions,
  type StreamPage,
} from "./streams";
export { WebhookMethods, type Webhook, type WebhookDefinition, type WebhookFormat } from "./webhooks";
export {
  isTerminal,
  type BackfillResult,
  type BatchCreated,
  type BatchItemError,
  type BatchItemResult,
  type BatchItemStatus,
  type ConcurrencyLimit,
  type ErrorCode,
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
  type TaskCounts,
  type TaskFailure,
  type TaskPage,
  type TaskPriority,
  type TaskState,
  type Transition,
  type WorkerInfo,
} from "./task";
