// What the orchestrator's API answers about tasks, as the client hands it out: the JSON's
// snake_case fields in camelCase, timestamps as `Date`. A task's context and results are the
// app's own data and pass through untouched, but for integers beyond ±(2^53 − 1): those are
// `bigint`s (exact; a `number` would round them), as in `JsonValue`.
import type { JsonObject, JsonValue } from "./json";
import type { StepError } from "./outcome";

/**
 * A task's state: `scheduled` until its delayed start (`runAt`), `running` until it is terminal,
 * then one of the others.
 */
export type TaskState = "scheduled" | "running" | "complete" | "error" | "cancelled";

/** A task's priority: the one it was created with, else its template's, else `normal`. */
export type TaskPriority = "high" | "normal" | "low";

/**
 * A step's state; a wait step is `waiting` while it waits, a child step while its child task runs.
 * A step ready to start but held by a concurrency or rate limit is `throttled` (not in flight, its
 * attempt not yet counted; {@link Step.throttle} says why).
 */
export type StepState =
  | "pending"
  | "throttled"
  | "enqueued"
  | "waiting"
  | "waiting_retry"
  | "completed"
  | "failed"
  | "skipped"
  | "cancelled";

/** Why a task ended in `error`: the step that failed it, its attempt and its error. */
export interface TaskFailure {
  step: string;
  attempt: number;
  error: StepError;
}

/**
 * A task. `Ctx` is the type of its context and `Res` of its result (the results of the steps
 * no other step depends on, by step name), both the app's to name. An integer beyond ±(2^53 − 1)
 * in either comes back as a `bigint` ({@link JsonValue}); type such a field `number | bigint`.
 */
export interface Task<Ctx = JsonObject, Res = JsonObject> {
  /** A UUID (v7: ids sort by creation time). */
  id: string;
  namespace: string;
  /** The template's name. */
  name: string;
  /** The template version it runs. */
  version: string;
  state: TaskState;
  context: Ctx;
  idempotencyKey: string | null;
  /** Steps not yet in a terminal state. */
  openSteps: number;
  /** Set once the task is `complete`; always `null` in {@link TaskPage} (lists leave it out). */
  result: Res | null;
  /** Set when the task is in `error`. */
  error: TaskFailure | null;
  createdAt: Date;
  completedAt: Date | null;
  /** Milliseconds from creation to completion. */
  durationMs: number | null;
  /** When a task created with `runAt` or `delay` starts; `null` for one that started at once. */
  runAt: Date | null;
  /** The task whose child step started this one; `null` for a task nobody started. */
  parentTaskId: string | null;
  /** That child step's id; `null` for a task nobody started. */
  parentStepId: string | null;
  /** 0 for a task nobody started; a child's is its parent's plus one. */
  depth: number;
  /** The child tasks its child steps started; only from `getTask` (`null` in {@link TaskPage}). */
  children: TaskChild[] | null;
  /** `normal` from a server before priorities. */
  priority: TaskPriority;
}

/**
 * A child task of a task ({@link Task.children}): the task `taskId` that its child step
 * `stepName` (`stepId`) started at its `attempt`, of the template `namespace`/`name`/`version`,
 * and that task's `state`.
 */
export interface TaskChild {
  taskId: string;
  stepId: string;
  stepName: string;
  attempt: number;
  state: TaskState;
  namespace: string;
  name: string;
  version: string;
}

/**
 * What a child-workflow step starts: a task of the template `namespace`/`name`/`version`
 * (pinned when the parent task was created).
 */
export interface StepChild {
  namespace: string;
  name: string;
  version: string;
  /** The child task's id once it exists; `null` before. */
  taskId: string | null;
  /** What cancelling or failing the parent does to the child while it runs. */
  onParentCancel: "cancel" | "abandon";
}

/**
 * What a wait step waits for: a duration (`sleep`), a time from the task's context (`until`) or
 * the signal named `signal`.
 */
export interface StepWait {
  kind: "sleep" | "until" | "signal";
  signal: string | null;
  /** When it wakes up, or times out waiting for its signal. */
  until: Date | null;
  /** What a signal wait does when it times out. */
  onTimeout: "fail" | "skip" | "continue" | null;
}

/**
 * Why a `throttled` step has not started yet: `concurrency` (every slot of the concurrency key
 * `key` is in use), `rate` (the rate key `key` has no token left) or `paused` (the rate key `key`
 * is paused).
 */
export interface StepThrottle {
  kind: "concurrency" | "rate" | "paused";
  key: string;
  /** That key's limit. */
  limit: number;
  /** When the step began to wait. */
  since: Date;
  /** When it may start; `null` for a concurrency wait (it starts when a slot frees). */
  until: Date | null;
}

/**
 * The concurrency limit of a step: at most `limit` steps of the key `key` run at once. The key is
 * resolved: `<namespace>/<template>:<value>` for a template's limit,
 * `<namespace>/<template>/<step>:<value>` for a step's own.
 */
export interface StepConcurrencyLimit {
  key: string;
  limit: number;
}

/**
 * The rate limit of a step: steps of the rate key `key` (a name shared cluster-wide) start at most
 * `limit` times per `perMs` milliseconds, `burst` at once.
 */
export interface StepRateLimit {
  key: string;
  limit: number;
  perMs: number;
  burst: number;
}

/** The limits that apply to a step (its own, else its template's), keys resolved from the task's context. */
export interface StepLimits {
  concurrency: StepConcurrencyLimit | null;
  rate: StepRateLimit | null;
}

/** A step of a task, with its result or error, attempts and per-hop times. */
export interface Step {
  id: string;
  name: string;
  handler: string;
  /**
   * `standard`, `decision`, `convergence`, `batchable`, `batch_worker`, `wait` or `child`, as the
   * template says.
   */
  stepType: string;
  state: StepState;
  attempt: number;
  maxAttempts: number;
  /** Its handler's result; integers beyond ±(2^53 − 1) are `bigint`s. */
  result: JsonValue | null;
  error: StepError | null;
  /** The worker that ran its last attempt. */
  worker: string | null;
  createdAt: Date;
  dispatchedAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** When the orchestrator applied its result. */
  processedAt: Date | null;
  /** When a step `waiting_retry` is published again. */
  nextAttemptAt: Date | null;
  /** A wait step's (run by the orchestrator, no handler of yours); `null` for the others. */
  wait: StepWait | null;
  /**
   * The queue namespace the step runs in: its own `namespace:` or its task's (`null` from a
   * server that does not say).
   */
  namespace: string | null;
  /**
   * A child-workflow step's (handler `tasker:child`, run by the orchestrator: its result is the
   * child task's result); `null` for the others.
   */
  child: StepChild | null;
  /** The step waits for a worker and no live worker serves its namespace and handler. */
  unserved: boolean;
  /** Which key holds a `throttled` step and until when; `null` for a step in another state. */
  throttle: StepThrottle | null;
  /** The concurrency and rate limits that apply to the step; `null` for a step without any. */
  limits: StepLimits | null;
}

/**
 * A concurrency key as {@link Client.concurrencyLimits} lists it: `key`
 * (`<namespace>/<template>:<value>` or `<namespace>/<template>/<step>:<value>`), its `limit`, the
 * slots `inUse` (steps of the key in flight) and the steps `throttled` waiting for one.
 */
export interface ConcurrencyLimit {
  key: string;
  limit: number;
  inUse: number;
  throttled: number;
}

/**
 * A rate key as {@link Client.rateLimits} lists it (and {@link Client.pauseRateLimit} and
 * {@link Client.resumeRateLimit} return it): `limit` starts per `perMs` milliseconds, `burst` at
 * once, and the steps `throttled` waiting for a token.
 */
export interface RateLimit {
  key: string;
  limit: number;
  perMs: number;
  burst: number;
  /** The end of its pause (no step of the key starts before); `null` when not paused. */
  pausedUntil: Date | null;
  /** The pause's note. */
  pauseNote: string | null;
  throttled: number;
}

/**
 * A worker process as the orchestrator's registry knows it ({@link Client.workers}). `live` is
 * false for a worker not seen for longer than the liveness window (listed only with `all`).
 */
export interface WorkerInfo {
  id: string;
  name: string;
  /** `rust`, `python`, `ruby`, `typescript`, … */
  language: string;
  /** Its package's version. */
  version: string;
  host: string;
  pid: number;
  /** The namespaces it consumes. */
  namespaces: string[];
  /** The handlers it registered. */
  handlers: string[];
  concurrency: number;
  startedAt: Date;
  lastSeenAt: Date;
  live: boolean;
}

/**
 * A signal sent to a task: the result of the wait step that takes it is its `payload`.
 * `consumedBy` names that step once one has (`null` while the signal waits for a step to wait
 * for it).
 */
export interface Signal {
  taskId: string;
  name: string;
  /** The sender's, or one the server made. */
  signalId: string;
  payload: JsonValue | null;
  receivedAt: Date;
  consumedBy: string | null;
  consumedAt: Date | null;
}

/** What a schedule does while the task it created last still runs. */
export type OverlapPolicy = "skip" | "allow" | "buffer_one" | "cancel_previous";

/**
 * A schedule: tasks of `template` (`version`, `null` for the newest when it fires) with
 * `context`, created at the times of `cron` in `timezone`. Fires missed longer ago than
 * `catchUp` (a duration such as `"1h"`) are skipped and counted in `skipped`.
 */
export interface Schedule {
  namespace: string;
  name: string;
  template: string;
  version: string | null;
  /** 5 fields, or 6 with seconds first. */
  cron: string;
  /** An IANA time zone. */
  timezone: string;
  context: JsonObject;
  overlap: OverlapPolicy;
  catchUp: string;
  paused: boolean;
  /** The note of its pause. */
  note: string | null;
  nextFireAt: Date | null;
  lastFireAt: Date | null;
  lastTaskId: string | null;
  fires: number;
  skipped: number;
  createdAt: Date;
  updatedAt: Date;
  /** The next fire times; only from `getSchedule` (`null` in a list). */
  upcoming: Date[] | null;
}

/**
 * What a backfill did: tasks `created` for fire times that had none, `existing` ones that had
 * (a backfill is safe to repeat), and the ids of both.
 */
export interface BackfillResult {
  created: number;
  existing: number;
  taskIds: string[];
}

/** What {@link Client.createTasks} did with one item: `refused` created nothing for it. */
export type BatchItemStatus = "created" | "existing" | "refused";

/**
 * Why {@link Client.createTasks} refused one item: the API's usual error, its stable `code` (the
 * one `createTask` would reject with: `unknown_template`, `context_schema_violation`,
 * `idempotency_key_reused`, …), `message` and `details`.
 */
export interface BatchItemError {
  code: string;
  message: string;
  /** `null` when the error has none. */
  details: JsonValue | null;
}

/**
 * What {@link Client.createTasks} did with the item at `index` of the request: `created`,
 * `existing` (its idempotency key had created that task already, with the same template and
 * context) or `refused` (nothing created for it; `error` says why).
 */
export interface BatchItemResult {
  index: number;
  status: BatchItemStatus;
  /** The task's id; `null` for a refused item. */
  taskId: string | null;
  /** Why it was refused; `null` for the others. */
  error: BatchItemError | null;
}

/**
 * What {@link Client.createTasks} did: how many items were `created`, `existing` and `refused`,
 * and each item's result in `results`, in request order.
 */
export interface BatchCreated {
  created: number;
  existing: number;
  refused: number;
  results: BatchItemResult[];
}

/** The finished states {@link Client.purge} removes tasks of. */
export type PurgeState = "complete" | "error" | "cancelled";

/**
 * What {@link Client.purge} did (or, a `dryRun`, would do): the finished tasks of `states` whose
 * completion is before `before` (now less `olderThan`), `tasks` of them purged.
 */
export interface PurgeResult {
  dryRun: boolean;
  olderThan: string;
  /** The completion-time cut-off: tasks that finished before it. */
  before: Date;
  states: PurgeState[];
  tasks: number;
  /** How many of each state. */
  byState: Partial<Record<PurgeState, number>>;
  /** Rows deleted, every table together; `null` in a dry run. */
  rows: number | null;
  /** Bytes of row data deleted; `null` in a dry run. */
  bytes: number | null;
  /** The request's limit stopped it with more to purge: call again. */
  more: boolean;
}

/**
 * The retention policy the orchestrator runs, as {@link Client.retention} reads it: how long
 * finished tasks of each state are kept before an orchestrator purges them (`complete`, `error`,
 * `cancelled`) and how long a purged task's id rejects with a `TaskPurgedError` (`tombstones`),
 * each a duration as configured (`"30d"`, `"36h"`, `"1h30m"`) or `"never"`; and the purge's pace.
 */
export interface RetentionPolicy {
  complete: string;
  error: string;
  cancelled: string;
  tombstones: string;
  /** How often an orchestrator looks for tasks to purge, in ms. */
  intervalMs: number;
  /** Tasks purged per transaction. */
  batch: number;
  /** The most of its time a purge spends deleting, 1–100. */
  busyPercent: number;
  /**
   * When the most recently purged task still remembered (its tombstone kept) was purged, by the
   * policy or by {@link Client.purge}; `null` when none is.
   */
  lastPurgedAt: Date | null;
}

/** One entry of a task's history: a task transition (`step` is `null`) or a step's. */
export interface Transition {
  step: string | null;
  from: string | null;
  to: string;
  attempt: number | null;
  reason: string | null;
  /** Who asked for a transition made by hand (a repair); `null` for the engine's own. */
  by: string | null;
  at: Date;
}

/** One page of tasks, newest first. */
export interface TaskPage<Ctx = JsonObject, Res = JsonObject> {
  tasks: Task<Ctx, Res>[];
  /** Pass as `before` for the next page; `null` on the last one. */
  nextBefore: string | null;
}

/** One page of a task's steps, in id order. */
export interface StepPage {
  steps: Step[];
  /** Pass as `after` for the next page; `null` on the last one. */
  next: string | null;
}

/** Whether a task has reached a state it leaves only by a repair. */
export function isTerminal(task: Pick<Task<unknown, unknown>, "state">): boolean {
  return task.state !== "running" && task.state !== "scheduled";
}

// The answers are the orchestrator's own, so they are mapped, not validated: a field it does not
// send shows up as `undefined`.
type Wire = Record<string, any>;

/** A task from the API's JSON. */

function date(value: string | null | undefined): Date | null {
  return value == null ? null : new Date(value);
}

export function taskFromJson<Ctx, Res>(json: unknown): Task<Ctx, Res> {
  const t = json as Wire;
  return {
    id: t.id,
    namespace: t.namespace,
    name: t.name,
    version: t.version,
    state: t.state,
    context: t.context,
    idempotencyKey: t.idempotency_key ?? null,
    openSteps: t.open_steps,
    result: t.result ?? null,
    error: t.error ?? null,
    createdAt: new Date(t.created_at),
    completedAt: date(t.completed_at),
    durationMs: t.duration_ms ?? null,
    runAt: date(t.run_at),
    parentTaskId: t.parent_task_id ?? null,
    parentStepId: t.parent_step_id ?? null,
    depth: t.depth ?? 0,
    children: Array.isArray(t.children) ? t.children.map(taskChildFromJson) : null,
    priority: t.priority ?? "normal",
  };
}

function taskChildFromJson(c: Wire): TaskChild {
  return {
    taskId: c.task_id,
    stepId: c.step_id,
    stepName: c.step_name,
    attempt: c.attempt,
    state: c.state,
    namespace: c.namespace,
    name: c.name,
    version: c.version,
  };
}

/** A step from the API's JSON. */
export function stepFromJson(json: unknown): Step {
  const s = json as Wire;
  return {
    id: s.id,
    name: s.name,
    handler: s.handler,
    stepType: s.step_type,
    state: s.state,
    attempt: s.attempt,
    maxAttempts: s.max_attempts,
    result: s.result ?? null,
    error: s.error ?? null,
    worker: s.worker ?? null,
    createdAt: new Date(s.created_at),
    dispatchedAt: date(s.dispatched_at),
    startedAt: date(s.started_at),
    finishedAt: date(s.finished_at),
    processedAt: date(s.processed_at),
    nextAttemptAt: date(s.next_attempt_at),
    wait: s.wait == null ? null : stepWaitFromJson(s.wait),
    namespace: s.namespace ?? null,
    child: s.child == null ? null : stepChildFromJson(s.child),
    unserved: s.unserved === true,
    throttle: s.throttle == null ? null : stepThrottleFromJson(s.throttle),
    limits: s.limits == null ? null : stepLimitsFromJson(s.limits),
  };
}

function stepThrottleFromJson(t: Wire): StepThrottle {
  return { kind: t.kind, key: t.key, limit: t.limit, since: new Date(t.since), until: date(t.until) };
}

function stepLimitsFromJson(l: Wire): StepLimits {
  return {
    concurrency: l.concurrency == null ? null : { key: l.concurrency.key, limit: l.concurrency.limit },
    rate:
      l.rate == null
        ? null
        : { key: l.rate.key, limit: l.rate.limit, perMs: l.rate.per_ms, burst: l.rate.burst },
  };
}

function stepChildFromJson(c: Wire): StepChild {
  return {
    namespace: c.namespace,
    name: c.name,
    version: c.version,
    taskId: c.task_id ?? null,
    onParentCancel: c.on_parent_cancel ?? "cancel",
  };
}

function stepWaitFromJson(w: Wire): StepWait {
  return { kind: w.kind, signal: w.signal ?? null, until: date(w.until), onTimeout: w.on_timeout ?? null };
}

/** A history entry from the API's JSON. */
export function transitionFromJson(json: unknown): Transition {
  const h = json as Wire;
  return {
    step: h.step ?? null,
    from: h.from ?? null,
    to: h.to,
    attempt: h.attempt ?? null,
    reason: h.reason ?? null,
    by: h.by ?? null,
    at: new Date(h.at),
  };
}

/** A signal from the API's JSON. */
export function signalFromJson(json: unknown): Signal {
  const g = json as Wire;
  return {
    taskId: g.task_id,
    name: g.name,
    signalId: g.signal_id,
    payload: g.payload ?? null,
    receivedAt: new Date(g.received_at),
    consumedBy: g.consumed_by ?? null,
    consumedAt: date(g.consumed_at),
  };
}

/** A schedule from the API's JSON. */
export function scheduleFromJson(json: unknown): Schedule {
  const c = json as Wire;
  return {
    namespace: c.namespace,
    name: c.name,
    template: c.template,
    version: c.version ?? null,
    cron: c.cron,
    timezone: c.timezone,
    context: c.context ?? {},
    overlap: c.overlap,
    catchUp: c.catch_up,
    paused: c.paused === true,
    note: c.note ?? null,
    nextFireAt: date(c.next_fire_at),
    lastFireAt: date(c.last_fire_at),
    lastTaskId: c.last_task_id ?? null,
    fires: c.fires,
    skipped: c.skipped,
    createdAt: new Date(c.created_at),
    updatedAt: new Date(c.updated_at),
    upcoming: Array.isArray(c.upcoming) ? c.upcoming.map((t: string) => new Date(t)) : null,
  };
}

/** A backfill's answer from the API's JSON. */
export function backfillFromJson(json: unknown): BackfillResult {
  const b = json as Wire;
  return { created: b.created, existing: b.existing, taskIds: b.task_ids };
}

/** A worker from the API's JSON. */
export function workerFromJson(json: unknown): WorkerInfo {
  const w = json as Wire;
  return {
    id: w.id,
    name: w.name,
    language: w.language,
    version: w.version,
    host: w.host,
    pid: w.pid,
    namespaces: w.namespaces ?? [],
    handlers: w.handlers ?? [],
    concurrency: w.concurrency,
    startedAt: new Date(w.started_at),
    lastSeenAt: new Date(w.last_seen_at),
    live: w.live === true,
  };
}

/** A concurrency key from the API's JSON. */
export function concurrencyLimitFromJson(json: unknown): ConcurrencyLimit {
  const c = json as Wire;
  return { key: c.key, limit: c.limit, inUse: c.in_use ?? 0, throttled: c.throttled ?? 0 };
}

/** A rate key from the API's JSON. */
export function rateLimitFromJson(json: unknown): RateLimit {
  const r = json as Wire;
  return {
    key: r.key,
    limit: r.limit,
    perMs: r.per_ms,
    burst: r.burst,
    pausedUntil: date(r.paused_until),
    pauseNote: r.pause_note ?? null,
    throttled: r.throttled ?? 0,
  };
}

/** A bulk create's answer from the API's JSON. */
export function batchCreatedFromJson(json: unknown): BatchCreated {
  const b = json as Wire;
  return {
    created: b.created,
    existing: b.existing,
    refused: b.refused,
    results: (b.results ?? []).map(
      (r: Wire): BatchItemResult => ({
        index: r.index,
        status: r.status,
        taskId: r.task_id ?? null,
        error:
          r.error == null ? null : { code: r.error.code, message: r.error.message, details: r.error.details ?? null },
      }),
    ),
  };
}

/** A purge's answer from the API's JSON. */
export function purgeResultFromJson(json: unknown): PurgeResult {
  const p = json as Wire;
  return {
    dryRun: p.dry_run === true,
    olderThan: p.older_than,
    before: new Date(p.before),
    states: p.states,
    tasks: p.tasks,
    byState: p.by_state ?? {},
    rows: p.rows ?? null,
    bytes: p.bytes ?? null,
    more: p.more === true,
  };
}

/** The retention policy from the API's JSON. */
export function retentionPolicyFromJson(json: unknown): RetentionPolicy {
  const r = json as Wire;
  return {
    complete: r.complete,
    error: r.error,
    cancelled: r.cancelled,
    tombstones: r.tombstones,
    intervalMs: r.interval_ms,
    batch: r.batch,
    busyPercent: r.busy_percent,
    lastPurgedAt: date(r.last_purged_at),
  };
}
