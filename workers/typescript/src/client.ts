// A client of the orchestrator's REST API, for apps that submit, wait for and repair tasks.
// Each request is one of the functions @hey-api/openapi-ts generated from the API's OpenAPI
// document (src/generated/sdk.gen.ts: paths, parameters and bodies typed by the document), sent
// by the transport (transport.ts), and each answer is read by the document's schema
// (client_wire.ts). What is written here is Tasker's own: the arguments as the client takes them,
// waiting through restarts, paging. Semantics follow the Rust client (tasker-client/src/lib.rs).
import { auditQuery, type AuditPage, type AuditQuery } from "./audit";
import { ApiError } from "./client_errors";
import type {
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
import { Backoff, isTransient, pause } from "./client_retry";
import { createBody, readCa, scheduleBody, taskId, taskQuery, timestamp } from "./client_requests";
import { answer, type SchemaName } from "./client_wire";
import { createClient, type Client as Generated } from "./generated/client";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import { stringifyApiJson, type JsonObject, type JsonValue } from "./json";
import type { Send } from "./operations";
import {
  isTerminal,
  type BackfillResult,
  type BatchCreated,
  type ConcurrencyLimit,
  type PurgeResult,
  type RateLimit,
  type RetentionPolicy,
  type Schedule,
  type Signal,
  type Step,
  type StepPage,
  type Task,
  type TaskPage,
  type Transition,
  type WorkerInfo,
} from "./task";
import { StreamMethods } from "./streams";
import { Transport } from "./transport";

/** The longest poll `wait` asks for, below the server's default cap (300 s) and most proxies' idle timeouts. */
const MAX_POLL_MS = 25_000;
/** The steps `steps()` asks for at a time (the server's default page). */
const STEPS_PAGE = 1_000;

/**
 * A client of one orchestrator (operations by filter: {@link OperationMethods}; counts by state:
 * {@link TaskCountMethods}; events: {@link EventMethods}; webhooks: {@link WebhookMethods}; alert
 * rules: {@link AlertMethods}; step streams: {@link StreamMethods}). Every call returns a Promise;
 * failures reject with a {@link TaskerClientError}: an {@link ApiError} subclass carrying the
 * API's stable error code, or a {@link ConnectionError} when no answer came. Integers beyond ±(2^53 − 1) in contexts, results, payloads and error details come back
 * as `bigint`s, exactly, and a `bigint` in a context, result or payload is sent as an exact JSON
 * integer (see {@link JsonValue}).
 *
 * ```ts
 * const client = new Client(); // TASKER_URL or http://127.0.0.1:8080
 * const task = await client.createTask<{ value: number }, { halve: { value: number } }>(
 *   "typescript_examples", "linear", { value: 6 });
 * const done = await client.wait(task, 60_000);
 * done.result?.halve.value; // 242
 * ```
 */
export class Client extends StreamMethods {
  readonly #http: Transport;
  /** The generated functions' client: this one's transport, JSON with exact big integers. */
  readonly #api: Generated;

  /**
   * A client of the orchestrator at `baseUrl` (default `TASKER_URL`, else
   * `http://127.0.0.1:8080`). Throws a {@link TaskerClientError} for a URL that is not
   * http(s):// or a CA file that cannot be read or holds no certificate.
   */
  constructor(baseUrl?: string, options: ClientOptions = {}) {
    super();
    const env = (name: string) => process.env[name] || undefined;
    const caFile = options.tlsCaFile ?? env("TASKER_TLS_CA_FILE");
    this.#http = new Transport(baseUrl ?? env("TASKER_URL") ?? "http://127.0.0.1:8080", {
      token: options.token ?? env("TASKER_TOKEN"),
      caPem: caFile === undefined ? undefined : readCa(caFile),
      timeoutMs: options.timeoutMs ?? 30_000,
    });
    this.#api = createClient({ baseUrl: this.#http.baseUrl, fetch: this.#http.fetch, bodySerializer: stringifyApiJson });
  }

  /**
   * What every generated request function is given: this client, errors thrown (the
   * transport's), the answer as text (read by {@link answer}, which keeps big integers exact).
   */
  get #send() {
    return { client: this.#api, throwOnError: true as const, parseAs: "text" as const };
  }

  /** The answer of a generated request function, read as the document's schema `name`. */
  async #read<T>(name: SchemaName, pending: Promise<{ data: unknown }>): Promise<T> {
    return answer<T>((await pending).data, name);
  }

  /** {@link StreamMethods}' transport: this client's. */
  protected get transport(): Transport {
    return this.#http;
  }

  /** {@link OperationMethods}' requests, sent as this client's. */
  protected request<T>(name: SchemaName, send: (options: Send) => Promise<{ data: unknown }>): Promise<T> {
    return this.#read<T>(name, send(this.#send));
  }

  /**
   * Every item of a list the API answers a page at a time (schedules, concurrency and rate
   * keys), following each page's `next` as the following one's `after`.
   */
  async #everyPage<T>(
    name: SchemaName,
    key: string,
    request: (after: string | undefined) => Promise<{ data: unknown }>,
  ): Promise<T[]> {
    const found: T[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.#read<Record<string, unknown>>(name, request(after));
      found.push(...(page[key] as T[]));
      if (typeof page.next !== "string") return found;
      after = page.next;
    }
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
    return this.#read("Task", api.createTask({ ...this.#send, body }));
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
    return this.#read("BatchCreated", api.createTasks({ ...this.#send, body }));
  }

  /**
   * A task as it is now (`404 task_not_found`). A task the retention policy purged rejects with a
   * {@link TaskPurgedError} (`410 task_purged`), as every call on a task id does.
   */
  async getTask<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>): Promise<Task<Ctx, Res>> {
    return this.#read("Task", api.getTask({ ...this.#send, path: { id: taskId(task) } }));
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
    const id = taskId(task);
    const deadline = performance.now() + timeoutMs;
    let poll = MAX_POLL_MS;
    const backoff = new Backoff();
    for (;;) {
      const left = Math.max(0, deadline - performance.now());
      const waitMs = Math.min(left, poll);
      try {
        // Seconds, to the millisecond (the transport gives the request that much more time).
        const query = { wait: (waitMs / 1000).toFixed(3) as unknown as number };
        const pending = api.getTask({ ...this.#send, path: { id }, query, signal: options.signal });
        const current = await this.#read<Task<Ctx, Res>>("Task", pending);
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
   * With `counts: true` the page's `counts` are the filter's counts by state.
   */
  async listTasks<Ctx = JsonObject, Res = JsonObject>(query: TaskQuery = {}): Promise<TaskPage<Ctx, Res>> {
    return this.#read("TaskPage", api.listTasks({ ...this.#send, query: taskQuery(query) }));
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
    return this.#read("Task", api.cancelTask({ ...this.#send, path: { id: taskId(task) } }));
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
    const request = { ...this.#send, path: { id: taskId(task) }, query: { ...page } };
    return this.#read("StepPage", api.taskSteps(request));
  }

  /** A task's transitions and its steps', oldest first. */
  async history(task: TaskRef<unknown, unknown>): Promise<Transition[]> {
    const history = api.taskHistory({ ...this.#send, path: { id: taskId(task) } });
    return (await this.#read<{ transitions: Transition[] }>("History", history)).transitions;
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
    const { step, ...body } = options;
    const id = taskId(task);
    const retried =
      step === undefined
        ? api.retryTask({ ...this.#send, path: { id }, body })
        : api.retryStep({ ...this.#send, path: { id, step }, body });
    return this.#read("Task", retried);
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
    return this.#read("Task", api.resolveStep({ ...this.#send, path: { id: taskId(task), step }, body }));
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
    return this.#read("Signal", api.sendSignal({ ...this.#send, path: { id: taskId(task), name }, body }));
  }

  /** Every signal sent to a task, oldest first. */
  async signals(task: TaskRef<unknown, unknown>): Promise<Signal[]> {
    const signals = api.listSignals({ ...this.#send, path: { id: taskId(task) } });
    return (await this.#read<{ signals: Signal[] }>("SignalList", signals)).signals;
  }

  /** Every schedule, or those of a `namespace`. */
  async listSchedules(query: { namespace?: string } = {}): Promise<Schedule[]> {
    return this.#everyPage<Schedule>("ScheduleList", "schedules", (after) =>
      api.listSchedules({ ...this.#send, query: { ...query, after } }),
    );
  }

  /** A schedule with its `upcoming` fire times (`404 schedule_not_found`). */
  async getSchedule(namespace: string, name: string): Promise<Schedule> {
    return this.#read("Schedule", api.getSchedule({ ...this.#send, path: { namespace, name } }));
  }

  /**
   * Creates the schedule `definition` describes, or updates the one of its namespace and name
   * (a paused one stays paused). `400 invalid_schedule`, `invalid_cron`, `invalid_timezone`, …
   * for a definition the API refuses; `404 unknown_template`.
   */
  async applySchedule<Ctx = JsonObject>(definition: ScheduleDefinition<Ctx>): Promise<Schedule> {
    const body = scheduleBody(definition) as wire.ScheduleSpec;
    return this.#read("Schedule", api.putSchedule({ ...this.#send, body }));
  }

  /** Changes some fields of a schedule's definition (`{ cron: "0 3 * * *" }`). */
  async updateSchedule<Ctx = JsonObject>(
    namespace: string,
    name: string,
    changes: Partial<Omit<ScheduleDefinition<Ctx>, "namespace" | "name">>,
  ): Promise<Schedule> {
    const body = scheduleBody(changes) as wire.ScheduleChanges;
    return this.#read("Schedule", api.updateSchedule({ ...this.#send, path: { namespace, name }, body }));
  }

  /** Deletes a schedule; the tasks it created are left as they are. */
  async deleteSchedule(namespace: string, name: string): Promise<void> {
    await api.deleteSchedule({ ...this.#send, path: { namespace, name } });
  }

  /** Pauses a schedule (it fires no more until {@link Client.resumeSchedule}), with a `note` saying why. */
  async pauseSchedule(namespace: string, name: string, options: { note?: string } = {}): Promise<Schedule> {
    const body = { note: options.note };
    return this.#read("Schedule", api.pauseSchedule({ ...this.#send, path: { namespace, name }, body }));
  }

  /** Resumes a paused schedule: its next fire is computed from now (the paused time is not caught up). */
  async resumeSchedule(namespace: string, name: string): Promise<Schedule> {
    return this.#read("Schedule", api.resumeSchedule({ ...this.#send, path: { namespace, name } }));
  }

  /** Creates a task of the schedule now, whatever its overlap policy. */
  async triggerSchedule<Ctx = JsonObject, Res = JsonObject>(namespace: string, name: string): Promise<Task<Ctx, Res>> {
    return this.#read("Task", api.triggerSchedule({ ...this.#send, path: { namespace, name } }));
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
    return this.#read("Backfilled", api.backfillSchedule({ ...this.#send, path: { namespace, name }, body }));
  }

  /**
   * The workers the orchestrator knows (their heartbeats): the live ones, or with `all` also
   * those not seen for longer than the liveness window (`live` false). Which namespaces and
   * handlers each serves.
   */
  async workers(options: { all?: boolean } = {}): Promise<WorkerInfo[]> {
    const query = options.all ? { all: true } : {};
    const workers = api.listWorkers({ ...this.#send, query });
    return (await this.#read<{ workers: WorkerInfo[] }>("WorkerList", workers)).workers;
  }

  /**
   * The concurrency keys, those with a slot in use or a step throttled first, then the ones used
   * most recently (every page): each one's `limit`, slots `inUse` and steps `throttled`.
   * `keyPrefix` keeps the keys that start with it (`"shop/charge_customer:"`).
   */
  async concurrencyLimits(keyPrefix?: string): Promise<ConcurrencyLimit[]> {
    return this.#everyPage<ConcurrencyLimit>("ConcurrencyLimitList", "limits", (after) =>
      api.listConcurrencyLimits({ ...this.#send, query: { key: keyPrefix, after } }),
    );
  }

  /** The rate keys (every page): each one's `limit` per `perMs`, `burst`, steps `throttled` and pause. */
  async rateLimits(): Promise<RateLimit[]> {
    return this.#everyPage<RateLimit>("RateLimitList", "limits", (after) =>
      api.listRateLimits({ ...this.#send, query: { after } }),
    );
  }

  /**
   * Pauses the rate key `key`: no step of it starts before `until` (a `Date` or an RFC 3339
   * string, in the future and at most a year ahead, else `400 invalid_until`), with a `note`
   * saying why. Resolves with the key, paused. `404 unknown_rate_limit` for a key no step ever
   * used; it takes a token with the `write` scope not restricted to namespaces.
   */
  async pauseRateLimit(key: string, until: Date | string, note?: string): Promise<RateLimit> {
    const body = { until: timestamp(until), note };
    return this.#read("RateLimit", api.pauseRateLimit({ ...this.#send, path: { key }, body }));
  }

  /** Ends the pause of the rate key `key` now; the same errors and scope as {@link Client.pauseRateLimit}. */
  async resumeRateLimit(key: string): Promise<RateLimit> {
    return this.#read("RateLimit", api.resumeRateLimit({ ...this.#send, path: { key } }));
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
    return this.#read("Purged", api.purgeTasks({ ...this.#send, body }));
  }

  /**
   * The retention policy the orchestrator runs (`GET /v1/retention`): how long finished tasks of
   * each state are kept before it purges them and purged ids reject with a
   * {@link TaskPurgedError} (durations such as `"30d"`, or `"never"`), the purge's pace, and
   * `lastPurgedAt`, when the most recently purged task still remembered was purged (`null` when
   * none is). Any valid token may read it.
   */
  async retention(): Promise<RetentionPolicy> {
    return this.#read("RetentionPolicy", api.retentionPolicy({ ...this.#send }));
  }

  /**
   * One page of the audit log, newest first (`GET /v1/audit`): the requests that asked to change
   * something (every route but `GET`), refused ones included, filtered by `namespace`, `token`
   * (its name), `route` (its pattern) and `method`, `since` and `until`; `limit` rows older than
   * `before` (the previous page's `nextBefore`). It takes an `admin` token (`403 forbidden`
   * otherwise); one scoped to namespaces reads the rows of its namespaces.
   */
  async audit(query: AuditQuery = {}): Promise<AuditPage> {
    return this.#read("AuditPage", api.listAudit({ ...this.#send, query: auditQuery(query) }));
  }
}
