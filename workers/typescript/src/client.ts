// A client of the orchestrator's REST API, for apps that submit, wait for and repair tasks.
// Semantics follow the Rust client (tasker-client/src/lib.rs).
import { readFileSync } from "node:fs";

import { auditPageFromJson, auditQuery, type AuditPage, type AuditQuery } from "./audit";
import { ApiError, TaskerClientError } from "./client_errors";
import { Backoff, isTransient, pause } from "./client_retry";
import { stringifyApiJson, type JsonObject, type JsonValue } from "./json";
import {
  backfillFromJson,
  batchCreatedFromJson,
  concurrencyLimitFromJson,
  isTerminal,
  purgeResultFromJson,
  rateLimitFromJson,
  retentionPolicyFromJson,
  scheduleFromJson,
  signalFromJson,
  stepFromJson,
  taskFromJson,
  transitionFromJson,
  workerFromJson,
  type BackfillResult,
  type BatchCreated,
  type ConcurrencyLimit,
  type OverlapPolicy,
  type PurgeResult,
  type PurgeState,
  type RateLimit,
  type RetentionPolicy,
  type Schedule,
  type Signal,
  type Step,
  type StepPage,
  type Task,
  type TaskPage,
  type TaskPriority,
  type TaskState,
  type Transition,
  type WorkerInfo,
} from "./task";
import { Transport, everyPage } from "./transport";

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

/** The longest poll `wait` asks for, below the server's default cap (300 s) and most proxies' idle timeouts. */
const MAX_POLL_MS = 25_000;
/** The steps `steps()` asks for at a time (the server's default page). */
const STEPS_PAGE = 1_000;

/**
 * A client of one orchestrator. Every call returns a Promise; failures reject with a
 * {@link TaskerClientError}: an {@link ApiError} subclass carrying the API's stable error code,
 * or a {@link ConnectionError} when no answer came. Integers beyond ±(2^53 − 1) in contexts,
 * results, payloads and error details come back as `bigint`s, exactly, and a `bigint` in a
 * context, result or payload is sent as an exact JSON integer (see {@link JsonValue}).
 *
 * ```ts
 * const client = new Client(); // TASKER_URL or http://127.0.0.1:8080
 * const task = await client.createTask<{ value: number }, { halve: { value: number } }>(
 *   "typescript_examples", "linear", { value: 6 });
 * const done = await client.wait(task, 60_000);
 * done.result?.halve.value; // 242
 * ```
 */
export class Client {
  readonly #http: Transport;

  /**
   * A client of the orchestrator at `baseUrl` (default `TASKER_URL`, else
   * `http://127.0.0.1:8080`). Throws a {@link TaskerClientError} for a URL that is not
   * http(s):// or a CA file that cannot be read or holds no certificate.
   */
  constructor(baseUrl?: string, options: ClientOptions = {}) {
    const env = (name: string) => process.env[name] || undefined;
    const caFile = options.tlsCaFile ?? env("TASKER_TLS_CA_FILE");
    this.#http = new Transport(baseUrl ?? env("TASKER_URL") ?? "http://127.0.0.1:8080", {
      token: options.token ?? env("TASKER_TOKEN"),
      caPem: caFile === undefined ? undefined : readCa(caFile),
      timeoutMs: options.timeoutMs ?? 30_000,
    });
  }

  /** The orchestrator's base URL. */
  get baseUrl(): string {
    return this.#http.baseUrl;
  }

  /**
   * Creates a task from the template `namespace`/`name` (`POST /v1/tasks`). `context` must
   * satisfy the template's schema (`422 context_schema_violation`); `404 unknown_template` if
   * no such template is registered. With `runAt` or `delay` the task is `scheduled` until then
   * (`task.runAt`), and `cancel` stops it like a running one. A `bigint` in `context` is sent
   * as an exact integer. A template with a concurrency or rate limit whose key is a JSON pointer
   * into the context needs that value there: `422 concurrency_key_missing` or
   * `rate_limit_key_missing` without it (or for a non-scalar), `concurrency_key_too_long` or
   * `rate_limit_key_too_long` for a value over 128 bytes.
   */
  async createTask<Ctx = JsonObject, Res = JsonObject>(
    namespace: string,
    name: string,
    context: Ctx,
    options: CreateTaskOptions = {},
  ): Promise<Task<Ctx, Res>> {
    const body = createBody({ ...options, namespace, name, context });
    return taskFromJson(await this.#http.send("POST", "/v1/tasks", { body }));
  }

  /**
   * Creates many tasks in one request and one transaction (`POST /v1/tasks:batch`, at most the
   * server's `max_batch_tasks`, 10,000 by default): each item what {@link Client.createTask}
   * takes. Resolves with each item's result in request order: `created`, `existing` (its
   * idempotency key had created that task) or `refused` (nothing created for it; its `error` has
   * the code `createTask` would reject with, e.g. `unknown_template`). One refused item does not
   * fail the others. The whole request is refused, nothing created, with `400 empty_batch`,
   * `400 duplicate_idempotency_key` (two items share a key; `details`: `{ key, indexes }`),
   * `413 batch_too_large` (`details`: `{ tasks, limit }`) or `413 body_too_large`.
   */
  async createTasks<Ctx = JsonObject>(tasks: CreateTaskRequest<Ctx>[]): Promise<BatchCreated> {
    const body = { tasks: tasks.map(createBody) };
    return batchCreatedFromJson(await this.#http.send("POST", "/v1/tasks:batch", { body }));
  }

  /**
   * A task as it is now (`404 task_not_found`). A task the retention policy purged rejects with a
   * {@link TaskPurgedError} (`410 task_purged`), as every call on a task id does.
   */
  async getTask<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>): Promise<Task<Ctx, Res>> {
    return taskFromJson(await this.#http.send("GET", taskPath(task)));
  }

  /**
   * Waits up to `timeoutMs` for a task to become terminal and returns it as it is then (still
   * `running` if the time ran out). Any timeout works: the wait is made of long polls within
   * the server's cap (`orchestrator.max_wait_seconds`), halved whenever a server with a lower
   * cap refuses one (`400 invalid_wait`). `Infinity` waits until it is terminal. It rides
   * through restarts: a poll the connection drops or refuses (or a gateway's 502, 503, 504) is
   * sent again with backoff (100 ms doubling to 2 s) until `timeoutMs` runs out, and only then
   * rejects with that {@link ConnectionError}. An answer of the API (a 4xx) rejects at once: a
   * task the retention policy purged with a {@link TaskPurgedError}. Aborting `signal` rejects
   * with its reason.
   */
  async wait<Ctx = JsonObject, Res = JsonObject>(
    task: TaskRef<Ctx, Res>,
    timeoutMs: number,
    options: { signal?: AbortSignal } = {},
  ): Promise<Task<Ctx, Res>> {
    if (Number.isNaN(timeoutMs)) throw new TypeError("wait: timeoutMs is NaN");
    const path = taskPath(task);
    const deadline = performance.now() + timeoutMs;
    let poll = MAX_POLL_MS;
    const backoff = new Backoff();
    for (;;) {
      const left = Math.max(0, deadline - performance.now());
      const waitMs = Math.min(left, poll);
      try {
        const answer = await this.#http.send("GET", path, {
          query: { wait: (waitMs / 1000).toFixed(3) },
          waitMs,
          signal: options.signal,
        });
        const current = taskFromJson<Ctx, Res>(answer);
        if (isTerminal(current) || left <= poll) return current;
        backoff.reset();
      } catch (err) {
        const remaining = deadline - performance.now();
        if (err instanceof ApiError && err.status === 400 && err.code === "invalid_wait" && poll > 1_000) {
          poll /= 2;
        } else if (isTransient(err) && remaining > 0 && !options.signal?.aborted) {
          await pause(Math.min(backoff.next(), remaining), options.signal);
        } else {
          throw err;
        }
      }
    }
  }

  /**
   * One page of tasks, newest first (`GET /v1/tasks`). Tasks in a list have no `result`
   * (`getTask` has it). `400 invalid_time` for a `createdAfter` or `createdBefore` string that
   * is not RFC 3339, `400 invalid_context_filter` for a `context` that is not an object.
   */
  async listTasks<Ctx = JsonObject, Res = JsonObject>(query: TaskQuery = {}): Promise<TaskPage<Ctx, Res>> {
    const answer = (await this.#http.send("GET", "/v1/tasks", { query: taskQuery(query) })) as {
      tasks: unknown[];
      next_before: string | null;
    };
    return { tasks: answer.tasks.map((t) => taskFromJson<Ctx, Res>(t)), nextBefore: answer.next_before ?? null };
  }

  /**
   * Every task `query` selects, newest first, read a page (`query.limit`) at a time as the
   * loop asks: `for await (const task of client.iterateTasks({ state: "error" }))`.
   */
  async *iterateTasks<Ctx = JsonObject, Res = JsonObject>(query: TaskQuery = {}): AsyncGenerator<Task<Ctx, Res>> {
    let before = query.before;
    for (;;) {
      const page = await this.listTasks<Ctx, Res>({ ...query, before });
      yield* page.tasks;
      if (page.nextBefore === null) return;
      before = page.nextBefore;
    }
  }

  /**
   * Cancels a running (or scheduled) task; its open steps are cancelled. `409 task_not_running`
   * if it is terminal.
   */
  async cancel<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>): Promise<Task<Ctx, Res>> {
    return taskFromJson(await this.#http.send("POST", `${taskPath(task)}/cancel`));
  }

  /** Every step of a task, in id order, read page by page. */
  async steps(task: TaskRef<unknown, unknown>): Promise<Step[]> {
    const steps: Step[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.stepsPage(task, { after, limit: STEPS_PAGE });
      steps.push(...page.steps);
      if (page.next === null) return steps;
      after = page.next;
    }
  }

  /**
   * One page of a task's steps in id order, after the step `after` (the previous page's
   * `next`); `limit` 1–5,000, default 1,000. A page also ends early at a byte budget of
   * results, so follow `next` rather than counting.
   */
  async stepsPage(task: TaskRef<unknown, unknown>, page: { after?: string; limit?: number } = {}): Promise<StepPage> {
    const answer = (await this.#http.send("GET", `${taskPath(task)}/steps`, { query: { ...page } })) as {
      steps: unknown[];
      next: string | null;
    };
    return { steps: answer.steps.map(stepFromJson), next: answer.next ?? null };
  }

  /** A task's transitions and its steps', oldest first. */
  async history(task: TaskRef<unknown, unknown>): Promise<Transition[]> {
    const answer = (await this.#http.send("GET", `${taskPath(task)}/history`)) as { transitions: unknown[] };
    return answer.transitions.map(transitionFromJson);
  }

  /**
   * Retries a task that ended in `error`: the step that failed it runs again with its
   * template's attempts, the steps the failure cancelled wait for their parents again,
   * completed steps keep their results. Returns the task, `running` again; `409
   * task_not_failed` unless it is in `error`.
   */
  async retry<Ctx = JsonObject, Res = JsonObject>(
    task: TaskRef<Ctx, Res>,
    options: RetryOptions = {},
  ): Promise<Task<Ctx, Res>> {
    const { step, ...note } = options;
    const path = step === undefined ? `${taskPath(task)}/retry` : `${stepPath(task, step)}/retry`;
    return taskFromJson(await this.#http.send("POST", path, { body: note }));
  }

  /**
   * Completes the step that failed a task (by id or name) with `result`, as if its handler had
   * returned it, and goes on from there. `422 invalid_result` if the step's type cannot take
   * it (a decision must name its branches, a batchable step list its batches).
   */
  async resolve<Ctx = JsonObject, Res = JsonObject>(
    task: TaskRef<Ctx, Res>,
    step: string,
    result: JsonValue,
    note: RepairNote = {},
  ): Promise<Task<Ctx, Res>> {
    const body = { result, by: note.by, reason: note.reason };
    return taskFromJson(await this.#http.send("POST", `${stepPath(task, step)}/resolve`, { body }));
  }

  /**
   * Sends the signal `name` with `payload` (any JSON, at most 64 KiB) to a task: the wait step
   * waiting for `name` (now, or once one starts waiting) completes with `payload` as its result.
   * `409 task_finished` for a finished task, `409 signal_conflict` for a `signalId` sent before
   * with another payload, `400 invalid_signal_name` for a name that is not 1–64 of
   * `[A-Za-z0-9_.-]`.
   */
  async signal(
    task: TaskRef<unknown, unknown>,
    name: string,
    payload?: JsonValue,
    options: SignalOptions = {},
  ): Promise<Signal> {
    const body = { signal_id: options.signalId, payload };
    const path = `${taskPath(task)}/signals/${encodeURIComponent(name)}`;
    return signalFromJson(await this.#http.send("POST", path, { body }));
  }

  /** Every signal sent to a task, oldest first. */
  async signals(task: TaskRef<unknown, unknown>): Promise<Signal[]> {
    const answer = (await this.#http.send("GET", `${taskPath(task)}/signals`)) as { signals: unknown[] };
    return answer.signals.map(signalFromJson);
  }

  /** Every schedule, or those of a `namespace`. */
  async listSchedules(query: { namespace?: string } = {}): Promise<Schedule[]> {
    return everyPage(this.#http, "/v1/schedules", { ...query }, "schedules", scheduleFromJson);
  }

  /** A schedule with its `upcoming` fire times (`404 schedule_not_found`). */
  async getSchedule(namespace: string, name: string): Promise<Schedule> {
    return scheduleFromJson(await this.#http.send("GET", schedulePath(namespace, name)));
  }

  /**
   * Creates the schedule `definition` describes, or updates the one of its namespace and name
   * (a paused one stays paused). `400 invalid_schedule`, `invalid_cron`, `invalid_timezone`, …
   * for a definition the API refuses; `404 unknown_template`.
   */
  async applySchedule<Ctx = JsonObject>(definition: ScheduleDefinition<Ctx>): Promise<Schedule> {
    return scheduleFromJson(await this.#http.send("POST", "/v1/schedules", { body: scheduleBody(definition) }));
  }

  /** Changes some fields of a schedule's definition (`{ cron: "0 3 * * *" }`). */
  async updateSchedule<Ctx = JsonObject>(
    namespace: string,
    name: string,
    changes: Partial<Omit<ScheduleDefinition<Ctx>, "namespace" | "name">>,
  ): Promise<Schedule> {
    const body = scheduleBody(changes);
    return scheduleFromJson(await this.#http.send("PATCH", schedulePath(namespace, name), { body }));
  }

  /** Deletes a schedule; the tasks it created are left as they are. */
  async deleteSchedule(namespace: string, name: string): Promise<void> {
    await this.#http.send("DELETE", schedulePath(namespace, name));
  }

  /** Pauses a schedule (it fires no more until {@link Client.resumeSchedule}), with a `note` saying why. */
  async pauseSchedule(namespace: string, name: string, options: { note?: string } = {}): Promise<Schedule> {
    const body = { note: options.note };
    return scheduleFromJson(await this.#http.send("POST", `${schedulePath(namespace, name)}/pause`, { body }));
  }

  /** Resumes a paused schedule: its next fire is computed from now (the paused time is not caught up). */
  async resumeSchedule(namespace: string, name: string): Promise<Schedule> {
    return scheduleFromJson(await this.#http.send("POST", `${schedulePath(namespace, name)}/resume`));
  }

  /** Creates a task of the schedule now, whatever its overlap policy. */
  async triggerSchedule<Ctx = JsonObject, Res = JsonObject>(namespace: string, name: string): Promise<Task<Ctx, Res>> {
    return taskFromJson(await this.#http.send("POST", `${schedulePath(namespace, name)}/trigger`));
  }

  /**
   * Creates the tasks of the schedule's fire times from `from` to `to` that have none yet:
   * repeating a backfill creates nothing new. `400 backfill_too_large` beyond 1,000 fire times.
   */
  async backfillSchedule(
    namespace: string,
    name: string,
    from: Date | string,
    to: Date | string,
  ): Promise<BackfillResult> {
    const body = { from: timestamp(from), to: timestamp(to) };
    return backfillFromJson(await this.#http.send("POST", `${schedulePath(namespace, name)}/backfill`, { body }));
  }

  /**
   * The workers the orchestrator knows (their heartbeats): the live ones, or with `all` also
   * those not seen for longer than the liveness window (`live` false). Which namespaces and
   * handlers each serves.
   */
  async workers(options: { all?: boolean } = {}): Promise<WorkerInfo[]> {
    const query = options.all ? { all: "true" } : {};
    const answer = (await this.#http.send("GET", "/v1/workers", { query })) as { workers: unknown[] };
    return answer.workers.map(workerFromJson);
  }

  /**
   * The concurrency keys, those with a slot in use or a step throttled first, then the ones used
   * most recently (every page): each one's `limit`, slots `inUse` and steps `throttled`.
   * `keyPrefix` keeps the keys that start with it (`"shop/charge_customer:"`).
   */
  async concurrencyLimits(keyPrefix?: string): Promise<ConcurrencyLimit[]> {
    return everyPage(this.#http, "/v1/concurrency-limits", { key: keyPrefix }, "limits", concurrencyLimitFromJson);
  }

  /** The rate keys (every page): each one's `limit` per `perMs`, `burst`, steps `throttled` and pause. */
  async rateLimits(): Promise<RateLimit[]> {
    return everyPage(this.#http, "/v1/rate-limits", {}, "limits", rateLimitFromJson);
  }

  /**
   * Pauses the rate key `key`: no step of it starts before `until` (a `Date` or an RFC 3339
   * string, in the future and at most a year ahead, else `400 invalid_until`), with a `note`
   * saying why. Resolves with the key, paused. `404 unknown_rate_limit` for a key no step ever
   * used; it takes a token with the `write` scope not restricted to namespaces.
   */
  async pauseRateLimit(key: string, until: Date | string, note?: string): Promise<RateLimit> {
    const body = { until: timestamp(until), note };
    return rateLimitFromJson(await this.#http.send("POST", rateLimitPausePath(key), { body }));
  }

  /** Ends the pause of the rate key `key` now; the same errors and scope as {@link Client.pauseRateLimit}. */
  async resumeRateLimit(key: string): Promise<RateLimit> {
    return rateLimitFromJson(await this.#http.send("DELETE", rateLimitPausePath(key)));
  }

  /**
   * Purges finished tasks whose completion is older than `olderThan`, with their steps,
   * transitions, signals and dead letters (`POST /v1/purge`): of `states` (all three finished
   * states by default), never a task that is unfinished or whose parent or child task is.
   * `dryRun` counts what would go and deletes nothing. `limit` bounds the tasks of one call:
   * `more` is true when it stopped there with more left, so call again. A purged task's id
   * rejects with a {@link TaskPurgedError} (`410 task_purged`) for as long as the server keeps its
   * tombstone. `400 invalid_older_than`, `invalid_state` or `invalid_limit`; it takes a token not
   * restricted to namespaces (`403 forbidden` otherwise).
   */
  async purge(options: PurgeOptions): Promise<PurgeResult> {
    const body = {
      older_than: options.olderThan,
      states: options.states,
      dry_run: options.dryRun ?? false,
      limit: options.limit,
    };
    return purgeResultFromJson(await this.#http.send("POST", "/v1/purge", { body }));
  }

  /**
   * The retention policy the orchestrator runs (`GET /v1/retention`): how long finished tasks of
   * each state are kept before it purges them and purged ids reject with a
   * {@link TaskPurgedError} (durations such as `"30d"`, or `"never"`), the purge's pace, and
   * `lastPurgedAt`, when the most recently purged task still remembered was purged (`null` when
   * none is). Any valid token may read it.
   */
  async retention(): Promise<RetentionPolicy> {
    return retentionPolicyFromJson(await this.#http.send("GET", "/v1/retention"));
  }

  /**
   * One page of the audit log, newest first (`GET /v1/audit`): the requests that asked to change
   * something (every route but `GET`), refused ones included, filtered by `namespace`, `token`
   * (its name), `route` (its pattern) and `method`, `since` and `until`; `limit` rows older than
   * `before` (the previous page's `nextBefore`). It takes an `admin` token (`403 forbidden`
   * otherwise); one scoped to namespaces reads the rows of its namespaces.
   */
  async audit(query: AuditQuery = {}): Promise<AuditPage> {
    return auditPageFromJson(await this.#http.send("GET", "/v1/audit", { query: auditQuery(query) }));
  }
}

/** A task to create as the API takes it (`POST /v1/tasks`, an item of `POST /v1/tasks:batch`). */
function createBody(task: CreateTaskRequest<unknown>): Record<string, unknown> {
  return {
    namespace: task.namespace,
    name: task.name,
    context: task.context,
    version: task.version,
    idempotency_key: task.idempotencyKey,
    run_at: task.runAt === undefined ? undefined : timestamp(task.runAt),
    delay: task.delay === undefined ? undefined : duration(task.delay),
    priority: task.priority,
  };
}

/** A task list's filter and page as the API takes them (`GET /v1/tasks`). */
function taskQuery(query: TaskQuery): Record<string, string | number | undefined> {
  const { createdAfter, createdBefore, context, ...same } = query;
  return {
    ...same,
    created_after: createdAfter === undefined ? undefined : timestamp(createdAfter),
    created_before: createdBefore === undefined ? undefined : timestamp(createdBefore),
    context: context === undefined ? undefined : stringifyApiJson(context),
  };
}

function taskPath(task: TaskRef<unknown, unknown>): string {
  return `/v1/tasks/${encodeURIComponent(typeof task === "string" ? task : task.id)}`;
}

/** A step's path: its id or name as one segment (a batch's name has a `#`). */
function stepPath(task: TaskRef<unknown, unknown>, step: string): string {
  return `${taskPath(task)}/steps/${encodeURIComponent(step)}`;
}

function rateLimitPausePath(key: string): string {
  return `/v1/rate-limits/${encodeURIComponent(key)}/pause`;
}

function schedulePath(namespace: string, name: string): string {
  return `/v1/schedules/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
}

/** A schedule definition's fields as the API names them. */
function scheduleBody(definition: Partial<ScheduleDefinition<unknown>>): Record<string, unknown> {
  const { catchUp, ...fields } = definition;
  return { ...fields, catch_up: catchUp };
}

/** A time as the API takes it: RFC 3339 (a `Date` in UTC). */
function timestamp(value: Date | string): string {
  return typeof value === "string" ? value : value.toISOString();
}

/** A duration as the API takes it: seconds become `"600s"` (`"1500ms"` with a fraction). */
function duration(value: string | number): string {
  if (typeof value === "string") return value;
  return Number.isInteger(value) ? `${value}s` : `${Math.round(value * 1000)}ms`;
}

function readCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    throw new TaskerClientError(`TLS: cannot read the CA file ${file}`, { cause: err });
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    throw new TaskerClientError(`TLS: ${file} holds no PEM certificate`);
  }
  return pem;
}
