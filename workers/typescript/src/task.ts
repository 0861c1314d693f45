// What the orchestrator's API answers, as the client hands it out: the wire types generated from
// the API's OpenAPI document (src/generated/types.gen.ts) in camelCase with `Date` timestamps
// (`Camel`, client_wire.ts), so every field the document names is here, described there. Only
// what the document leaves as free JSON is typed here: a task's context and result (the app's
// own types), errors and payloads. Integers beyond ±(2^53 − 1) in those are `bigint`s.
import type { Camel } from "./client_wire";
import type * as wire from "./generated/types.gen";
import type { JsonObject, JsonValue } from "./json";
import type { StepError } from "./outcome";

/**
 * A task's state: `scheduled` until its delayed start (`runAt`), `running` until it is terminal,
 * then one of the others.
 */
export type TaskState = wire.TaskStateName;
/** A task's priority: the one it was created with, else its template's, else `normal`. */
export type TaskPriority = wire.Priority;
/**
 * A step's state; a wait step is `waiting` while it waits, a child step while its child task
 * runs. A step ready to start but held by a concurrency or rate limit is `throttled`
 * ({@link Step.throttle} says why).
 */
export type StepState = wire.StepStateName;
/** What a schedule does while the task it created last still runs. */
export type OverlapPolicy = wire.Overlap;
/** The finished states {@link Client.purge} removes tasks of. */
export type PurgeState = wire.PurgeState;
/** What {@link Client.createTasks} did with one item: `refused` created nothing for it. */
export type BatchItemStatus = wire.BatchStatus;
/** Every error code the API answers with. */
export type ErrorCode = wire.ErrorCode;

/** Why a task ended in `error`: the step that failed it, its attempt and its error. */
export interface TaskFailure {
  step: string;
  attempt: number;
  error: StepError;
}

/**
 * A task. `Ctx` is the type of its context and `Res` of its result (the results of the steps no
 * other step depends on, by step name), both the app's to name; type a field that may hold an
 * integer beyond ±(2^53 − 1) `number | bigint`. `result` is `null` in a {@link TaskPage}.
 */
export type Task<Ctx = JsonObject, Res = JsonObject> = Omit<Camel<wire.Task>, "context" | "result" | "error"> & {
  context: Ctx;
  result: Res | null;
  error: TaskFailure | null;
};
/** A child task of a task ({@link Task.children}). */
export type TaskChild = Camel<wire.ChildLink>;
/** A step of a task, with its result or error, attempts and per-hop times. */
export type Step = Omit<Camel<wire.Step>, "result" | "error"> & {
  /** Its handler's result. */
  result: JsonValue | null;
  error: StepError | null;
};
/** What a child-workflow step starts ({@link Step.child}). */
export type StepChild = Camel<wire.StepChild>;
/** What a wait step waits for ({@link Step.wait}). */
export type StepWait = Camel<wire.StepWait>;
/** Why a `throttled` step has not started yet ({@link Step.throttle}). */
export type StepThrottle = Camel<wire.StepThrottle>;
/** The limits that apply to a step ({@link Step.limits}). */
export type StepLimits = Camel<wire.StepLimits>;
export type StepConcurrencyLimit = Camel<wire.StepConcurrencyLimit>;
export type StepRateLimit = Camel<wire.StepRateLimit>;
/** One entry of a task's history: a task transition (`step` is `null`) or a step's. */
export type Transition = Camel<wire.Transition>;
/** A concurrency key as {@link Client.concurrencyLimits} lists it. */
export type ConcurrencyLimit = Camel<wire.ConcurrencyLimit>;
/** A rate key as {@link Client.rateLimits} lists it. */
export type RateLimit = Camel<wire.RateLimit>;
/** A worker process as the orchestrator's registry knows it ({@link Client.workers}). */
export type WorkerInfo = Camel<wire.WorkerInfo>;
/** A signal sent to a task: the result of the wait step that takes it is its `payload`. */
export type Signal = Omit<Camel<wire.Signal>, "payload"> & { payload: JsonValue | null };
/** A schedule: tasks of `template` with `context`, created at the times of `cron` in `timezone`. */
export type Schedule = Omit<Camel<wire.Schedule>, "context"> & { context: JsonObject };
/** What a backfill did. */
export type BackfillResult = Camel<wire.Backfilled>;
/** Why {@link Client.createTasks} refused one item: the API's usual error. */
export type BatchItemError = Omit<Camel<wire.ErrorDetail>, "details"> & { details: JsonValue | null };
/** What {@link Client.createTasks} did with the item at `index` of the request. */
export type BatchItemResult = Omit<Camel<wire.BatchItem>, "error"> & { error: BatchItemError | null };
/** What {@link Client.createTasks} did, each item's result in request order. */
export type BatchCreated = Omit<Camel<wire.BatchCreated>, "results"> & { results: BatchItemResult[] };
/** What {@link Client.purge} did (or, a `dryRun`, would do). */
export type PurgeResult = Camel<wire.Purged>;
/** The retention policy the orchestrator runs, as {@link Client.retention} reads it. */
export type RetentionPolicy = Camel<wire.RetentionPolicy>;
/** How many tasks of each state a filter matches, and their `total` ({@link Client.taskCounts}). */
export type TaskCounts = Camel<wire.TaskCounts>;
/** One page of tasks, newest first: `nextBefore` is the next page's `before` (`null` on the last). */
export type TaskPage<Ctx = JsonObject, Res = JsonObject> = Omit<Camel<wire.TaskPage>, "tasks"> & {
  tasks: Task<Ctx, Res>[];
};
/** One page of a task's steps in id order: `next` is the next page's `after` (`null` on the last). */
export type StepPage = Omit<Camel<wire.StepPage>, "steps"> & { steps: Step[] };

/** Whether a task has reached a state it leaves only by a repair. */
export function isTerminal(task: Pick<Task<unknown, unknown>, "state">): boolean {
  return task.state !== "running" && task.state !== "scheduled";
}
