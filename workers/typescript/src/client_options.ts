// What the calls of {@link Client} take besides their ids: how it reaches the orchestrator, a
// task to create, a query of tasks, a schedule's definition, a purge, a repair's note.
import type { JsonObject } from "./json";
import type { OverlapPolicy, PurgeState, Task, TaskPriority, TaskState } from "./task";

/** How a {@link Client} reaches the orchestrator; each falls back to its `TASKER_*` variable. */
export interface ClientOptions {
  /** Sent as `Authorization: Bearer <token>` (an orchestrator that requires tokens). `TASKER_TOKEN`. */
  token?: string;
  /**
   * PEM file of CA certificates trusted beside Node's built-in roots, for an `https://`
   * orchestrator whose certificate a private CA signed. Read once, by the constructor.
   * `TASKER_TLS_CA_FILE`.
   */
  tlsCaFile?: string;
  /**
   * How long one request may take, in ms (default 30,000). A long poll gets the time it asked
   * the server to wait on top.
   */
  timeoutMs?: number;
}

/** A task, or its id. A `Task` passes its context and result types on. */
export type TaskRef<Ctx = JsonObject, Res = JsonObject> = string | Task<Ctx, Res>;

/** Options of {@link Client.createTask}. */
export interface CreateTaskOptions {
  /** The template version; the newest registered one by default. */
  version?: string;
  /**
   * Creating again with the same key returns the task the key created (the same template and
   * context), or fails with `409 idempotency_key_reused` (a different one).
   */
  idempotencyKey?: string;
  /**
   * Starts the task then (a `Date`, or an RFC 3339 string), at most a year ahead; a past time
   * starts it at once. It is `scheduled` until then. Not with `delay` (`400 invalid_run_at`).
   */
  runAt?: Date | string;
  /**
   * Starts the task this much later: a duration such as `"10m"` or `"1h30m"`, or seconds
   * (`600` is sent as `"600s"`); at most a year (`400 invalid_delay`).
   */
  delay?: string | number;
  /**
   * The task's priority; by default its template's (`priority:`), else `normal` (`task.priority`
   * says which it got).
   */
  priority?: TaskPriority;
  /**
   * A dedupe window (docs/events.md): `key` is the idempotency key for `ttl` (`"24h"`, or
   * seconds), also after the task is purged; a repeat then fails with `409 deduplicated`
   * (`details`: `{ task_id, until }`). Not with `idempotencyKey` (`400 invalid_dedupe`).
   */
  dedupe?: { key: string; ttl: string | number };
  /**
   * One task per burst of requests for `key`: `trailing` (the default) starts it `period`
   * after the last request, with its context, never later than `max` after the first (every
   * request answers the same `scheduled` task); `leading` starts it at the first. Durations
   * as for `delay`. Not with `idempotencyKey`, `dedupe`, `runAt` or `delay`
   * (`400 invalid_debounce`).
   */
  debounce?: {
    key: string;
    period: string | number;
    max?: string | number;
    mode?: "leading" | "trailing";
  };
  /**
   * How long the task may run from its start (`within`: a duration as for `delay`, 1s to a
   * year) and what it gets when it runs longer: `fail` (the default: it ends in `error`,
   * `error.kind` `deadline_passed`), `cancel`, or `alert` (it runs on; `task.deadline.passed_at`
   * says when it passed). Replaces the template's `deadline` (`400 invalid_deadline`).
   */
  deadline?: { within: string | number; action?: "fail" | "cancel" | "alert" };
}

/**
 * One item of {@link Client.createTasks}: what {@link Client.createTask} takes, its template,
 * `context` (`{}` by default) and options in one object.
 */
export interface CreateTaskRequest<Ctx = JsonObject> extends CreateTaskOptions {
  namespace: string;
  /** The template's name. */
  name: string;
  context?: Ctx;
}

/** What {@link Client.purge} removes. */
export interface PurgeOptions {
  /** Tasks finished longer ago than this: a duration such as `"90m"`, `"36h"` or `"30d"`, at least an hour. */
  olderThan: string;
  /** Of these finished states; all three by default. */
  states?: PurgeState[];
  /** Count what would go, delete nothing (`rows` and `bytes` are then `null`). `false` by default. */
  dryRun?: boolean;
  /** Most tasks this call purges, 1–100,000 (the server's default 10,000): call again while `more`. */
  limit?: number;
}

/** Options of {@link Client.signal}. */
export interface SignalOptions {
  /**
   * 1–128 characters. Sending the same id with the same payload again returns the signal sent
   * first and changes nothing (a retried request is safe); another payload fails with `409
   * signal_conflict`. Without one, the server makes one and each call is a new signal.
   */
  signalId?: string;
}

/** A schedule's definition, as {@link Client.applySchedule} takes it (a schedule YAML file's fields). */
export interface ScheduleDefinition<Ctx = JsonObject> {
  namespace: string;
  name: string;
  /** A template of the same namespace. */
  template: string;
  /** The template version; the newest when it fires by default. */
  version?: string | null;
  /** 5 fields (`"30 2 * * *"`), or 6 with seconds first. */
  cron: string;
  /** An IANA time zone; `UTC` by default. */
  timezone?: string;
  /** The context of each task; `{}` by default. */
  context?: Ctx;
  /** What a fire does while the previous task still runs; `skip` by default. */
  overlap?: OverlapPolicy;
  /** Fires missed longer ago than this are skipped (and counted); `"1h"` by default. */
  catchUp?: string;
}

/** Filter and page of {@link Client.listTasks}. */
export interface TaskQuery {
  state?: TaskState;
  namespace?: string;
  /** The template's name. */
  name?: string;
  /** Tasks per page: 1–500, default 50. */
  limit?: number;
  /** The previous page's `nextBefore`: tasks older than this one. */
  before?: string;
  /** A task's id: its child tasks (the ones its child steps started). */
  parent?: string;
  /** Tasks created at or after this time (a `Date`, or an RFC 3339 string). */
  createdAfter?: Date | string;
  /** Tasks created strictly before this time (a `Date`, or an RFC 3339 string). */
  createdBefore?: Date | string;
  /**
   * Tasks whose context contains this JSON object (sent as JSON text; a `bigint` exactly):
   * `{ order_id: 42 }` matches `{ order_id: 42, rush: true }`; nested objects match by subset,
   * arrays by containment.
   */
  context?: object;
  /** Tasks whose id begins with these hexadecimal digits (4 to 32; hyphens allowed). */
  idPrefix?: string;
  /** The task started with this idempotency key. */
  idempotencyKey?: string;
  /**
   * Also count the tasks of each state the filter matches: the page's `counts` ({@link
   * Client.taskCounts}); `state`, `before` and `limit` do not narrow them. `null` without it.
   */
  counts?: boolean;
}

/** Who asks for a repair and why; both are recorded in the task's history. */
export interface RepairNote {
  by?: string;
  reason?: string;
}

/** Options of {@link Client.retry}. */
export interface RetryOptions extends RepairNote {
  /**
   * The failed step, by id or name (`409 step_not_failed` for another); by default the step
   * that failed the task.
   */
  step?: string;
}
