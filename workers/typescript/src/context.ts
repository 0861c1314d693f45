import { ReferenceUnavailable, StreamError } from "./errors";
import { parseCoreJson, type JsonObject, type JsonValue } from "./json";

/** What a handler receives for one step attempt. */
export interface StepContext {
  taskId: string;
  stepId: string;
  namespace: string;
  taskName: string;
  stepName: string;
  /** The handler name the template gives the step. */
  handler: string;
  /** 1 on the first run, then 2, 3, … on retries. */
  attempt: number;
  maxAttempts: number;
  /** The task's context, as submitted. */
  context: JsonObject;
  /**
   * Results of the step's completed parents, by step name: `await ctx.parentResults.all()`
   * for all of them, `for await (const [name, result] of ctx.parentResults)` one at a time.
   */
  parentResults: ParentResults;
  /** A batch worker's batch (what its batchable parent returned for it); null otherwise. */
  input: JsonValue;
  /** The step's timeout in seconds; past it the attempt fails (retryably) and `signal` aborts. */
  timeout: number;
  /** @deprecated The step's timeout in milliseconds; use {@link timeout} (seconds). */
  timeoutMs: number;
  /** Aborted when the attempt times out: pass it to fetch, timers, child processes… */
  signal: AbortSignal;
  /**
   * Whether the step is still this worker's to finish: handed out, within its timeout, the
   * worker not stopped. A long handler checks it between units of work and stops once it is
   * false (its outcome would be ignored). It does not extend the timeout. Outside a worker
   * (a job run in a test) always true.
   */
  heartbeat(): boolean;
  /**
   * Sends `data` (JSON) on `topic` of the step's stream, without waiting: readers of the
   * task's stream get it within milliseconds, and it is kept for the task's retention
   * (docs/streams.md). Throws a {@link StreamError} if it is not taken.
   */
  emit(topic: string, data: JsonValue): void;
  /** Sends `text` on `topic` of the step's stream: one chunk per call (a token, a line). */
  emitText(topic: string, text: string): void;
  /** What `emit` and `emitText` sent, as `[topic, data or text]`, when the context runs without
   * a worker (a job run in a test); empty under a worker. */
  emitted: Array<[string, JsonValue]>;
}

/** A job as the native core hands it over (snake_case, as serialized by the Rust core): the
 * worker protocol's `job` (tasker-worker/protocol.schema.json). */
export interface Job {
  id: number;
  task_id: string;
  step_id: string;
  namespace: string;
  task_name: string;
  step_name: string;
  handler: string;
  attempt: number;
  max_attempts: number;
  context: JsonObject;
  parent_results: JsonObject;
  /** True when `parent_results` is empty because they are more than one page: read them. */
  parent_results_by_reference?: boolean;
  /** Absent unless the step is a batch worker (and on cores that predate batches). */
  input?: JsonValue;
  timeout_ms: number;
}

/** Reads a page of one step's parent results: the JSON object text and the next cursor (none
 * after the last page). */
export type PageReader = (after: string | null) => Promise<{ results: string; next?: string | null }>;

/**
 * The results of a step's completed parents, by step name.
 *
 * The step message carries them when they fit on one page. Beyond that (the convergence step of
 * a large fan-out) they are read from the orchestrator when asked for: {@link all} reads them
 * all once and keeps them; iterating (`for await`) reads a page at a time and keeps none, so a
 * handler that folds 100,000 results holds one page of them. If the orchestrator cannot be
 * reached, both reject with {@link ReferenceUnavailable} and the step is retried.
 */
export class ParentResults implements AsyncIterable<[string, JsonValue]> {
  readonly #carried: JsonObject;
  readonly #pages: PageReader | undefined;
  #all: Promise<JsonObject> | undefined;

  constructor(carried: JsonObject = {}, pages?: PageReader) {
    this.#carried = carried;
    this.#pages = pages;
  }

  /** Whether they are read from the orchestrator rather than carried by the step message. */
  get byReference(): boolean {
    return this.#pages !== undefined;
  }

  /** All of them, by step name (read on the first call if they are not carried). */
  all(): Promise<JsonObject> {
    if (this.#pages === undefined) {
      return Promise.resolve(this.#carried);
    }
    this.#all ??= (async () => {
      const all: JsonObject = {};
      for await (const [name, result] of this) {
        all[name] = result;
      }
      return all;
    })().catch((err: unknown) => {
      this.#all = undefined; // a failed read is tried again by the next call
      throw err;
    });
    return this.#all;
  }

  /** `[name, result]` of each completed parent, a page at a time (pages in the order of the
   * parents' ids). */
  async *[Symbol.asyncIterator](): AsyncIterator<[string, JsonValue]> {
    const pages = this.#pages;
    if (pages === undefined) {
      yield* Object.entries(this.#carried);
      return;
    }
    let after: string | null = null;
    do {
      const page = await pages(after);
      yield* Object.entries(parseCoreJson(page.results) as JsonObject);
      after = page.next ?? null;
    } while (after !== null);
  }
}

/** Asks the core whether a job is still this worker's: the native core's `heartbeat`. */
export type Heartbeat = (job: number) => boolean;

/** Hands a chunk of a job's stream to the core: the native core's `emit` (`null`: taken; else
 * the refusal's `[kind, message]`). */
export type Emit = (job: number, topic: string, payload: string, text: boolean) => string[] | null;

/** What a context asks the core besides its job: pages of parent results, heartbeats, emits. */
export interface Core {
  pages?: PageReader;
  heartbeat?: Heartbeat;
  emit?: Emit;
}

export function stepContext(job: Job, signal: AbortSignal, core: Core = {}): StepContext {
  const { pages, heartbeat, emit } = core;
  const emitted: Array<[string, JsonValue]> = [];
  const send = (topic: string, payload: string, text: boolean, value: JsonValue): void => {
    if (emit === undefined) {
      emitted.push([topic, value]);
      return;
    }
    const refused = emit(job.id, topic, payload, text);
    if (refused) {
      throw new StreamError(refused[1] ?? "", { kind: refused[0] });
    }
  };
  return {
    taskId: job.task_id,
    stepId: job.step_id,
    namespace: job.namespace,
    taskName: job.task_name,
    stepName: job.step_name,
    handler: job.handler,
    attempt: job.attempt,
    maxAttempts: job.max_attempts,
    context: job.context,
    parentResults: new ParentResults(
      job.parent_results,
      job.parent_results_by_reference ? pages ?? missingReader : undefined,
    ),
    input: job.input ?? null,
    timeout: job.timeout_ms / 1000,
    timeoutMs: job.timeout_ms,
    signal,
    heartbeat: () => heartbeat?.(job.id) ?? true,
    emit(topic: string, data: JsonValue): void {
      let payload: string | undefined;
      try {
        payload = JSON.stringify(data);
      } catch (err) {
        throw new StreamError(`invalid stream chunk: its data is not JSON: ${String(err)}`, {
          kind: "invalid_stream_chunk",
        });
      }
      if (payload === undefined) {
        throw new StreamError("invalid stream chunk: its data is not JSON", { kind: "invalid_stream_chunk" });
      }
      send(topic, payload, false, data);
    },
    emitText(topic: string, text: string): void {
      if (typeof text !== "string") {
        throw new StreamError("invalid stream chunk: emitText takes a string", { kind: "invalid_stream_chunk" });
      }
      send(topic, text, true, text);
    },
    emitted,
  };
}

/** For a job read without a core (tests): its parent results cannot be fetched. */
const missingReader: PageReader = () =>
  Promise.reject(new ReferenceUnavailable("the job's parent results are by reference and nothing reads them"));
