import { stepContext, type Core, type Job } from "./context";
import { isPermanent, retryAfterMs } from "./errors";
import type { Registry } from "./handler";
import type { JsonValue } from "./json";
import type { Outcome, OutcomeBody, StepError } from "./outcome";

/**
 * Runs one job's handler and never throws: every result, throw, rejection or timeout becomes an
 * outcome. Resolves by the job's timeout at the latest, so a hung handler frees its slot (its
 * `signal` aborts; whatever it does afterwards is ignored). `core` reads parent results the job
 * carries by reference, answers the context's `heartbeat()` and takes its `emit`s.
 */
export async function execute(registry: Registry, job: Job, core: Core = {}): Promise<Outcome> {
  // Seconds since the epoch, as the core takes them (cheaper than formatting a date); the
  // finish adds the run's duration from the monotonic clock.
  const startedAt = epochSeconds();
  const t0 = performance.now();
  const finish = (body: OutcomeBody): Outcome => ({
    id: job.id,
    ...body,
    started_at: startedAt,
    finished_at: startedAt + (performance.now() - t0) / 1000,
  });

  const fn = registry.get(job.handler);
  if (!fn) {
    return finish({
      status: "failure",
      retryable: false,
      error: {
        kind: "unknown_handler",
        message: `no handler named ${JSON.stringify(job.handler)} is registered in this worker`,
      },
    });
  }

  const abort = new AbortController();
  let deadline: Deadline | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    deadline = deadlines.add(job.timeout_ms, () => resolve("timeout"));
  });
  try {
    // `async` turns a synchronous throw into a rejection, so sync and async handlers fail alike.
    const call = (async () => fn(stepContext(job, abort.signal, core)))();
    // race() subscribes to `call`, so a rejection after the timeout is never "unhandled".
    const first = await Promise.race([call, timedOut]);
    if (first === "timeout") {
      abort.abort(new Error(`step timed out after ${job.timeout_ms} ms`));
      return finish({
        status: "failure",
        retryable: true,
        error: { kind: "timeout", message: `handler did not finish within ${job.timeout_ms} ms` },
      });
    }
    // `undefined` is not JSON: a handler that returns nothing succeeds with null.
    return finish({ status: "success", result: (first ?? null) as JsonValue });
  } catch (err) {
    const delay = retryAfterMs(err);
    return finish({
      status: "failure",
      retryable: !isPermanent(err),
      error: stepError(err),
      ...(delay === undefined ? {} : { retry_after_ms: Math.round(delay) }),
    });
  } finally {
    if (deadline) deadlines.delete(deadline);
  }
}

/**
 * Seconds since the epoch with microseconds. `Date.now()` has whole milliseconds, so a start
 * stamped with it reads up to 1 ms early (the step's wait looks shorter and its result's trip
 * longer than they were); the monotonic clock anchored at the process's start has microseconds
 * but does not follow a step of the wall clock. This takes the latter, kept within the
 * millisecond `Date.now()` reports: never more than 1 ms off, and exact while the clocks agree.
 */
export function epochSeconds(): number {
  const wall = Date.now();
  const precise = performance.timeOrigin + performance.now();
  return Math.min(Math.max(precise, wall), wall + 0.999) / 1000;
}

interface Deadline {
  /** `Date.now()` past which the job has timed out. */
  at: number;
  expire: () => void;
}

/**
 * The deadlines of running jobs, watched by one timer set for the earliest of them: a timer set
 * and cleared for every job costs a short handler more than the rest of its run. A job that ends
 * leaves the timer as it is; when it fires it expires what is due and is set for the next
 * deadline, if any. It keeps the process alive only while jobs are running.
 */
class Deadlines {
  readonly #running = new Set<Deadline>();
  #timer: NodeJS.Timeout | undefined;
  /** When the timer fires (Infinity: not set). */
  #firesAt = Infinity;

  add(ms: number, expire: () => void): Deadline {
    const d = { at: Date.now() + ms, expire };
    this.#running.add(d);
    if (d.at < this.#firesAt) {
      this.#set(d.at);
    } else if (this.#running.size === 1) {
      this.#timer?.ref();
    }
    return d;
  }

  delete(d: Deadline): void {
    if (this.#running.delete(d) && this.#running.size === 0) {
      this.#timer?.unref();
    }
  }

  #set(at: number): void {
    clearTimeout(this.#timer);
    this.#firesAt = at;
    // Never before `at`: a job expires only once its whole timeout has passed.
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, at - Date.now()) + 1);
  }

  #fire(): void {
    this.#timer = undefined;
    this.#firesAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const d of this.#running) {
      if (d.at <= now) {
        this.#running.delete(d);
        d.expire();
      } else if (d.at < next) {
        next = d.at;
      }
    }
    if (next < Infinity) this.#set(next);
  }
}

const deadlines = new Deadlines();

/** The kind (the error's own `kind`, else its class name), message and stack of whatever was thrown. */
export function stepError(err: unknown): StepError {
  if (err instanceof Error) {
    const own = (err as { kind?: unknown }).kind;
    return {
      kind: (typeof own === "string" && own) || err.constructor?.name || err.name || "Error",
      message: err.message,
      ...(err.stack ? { backtrace: err.stack } : {}),
    };
  }
  // `throw "text"` and the like: no class and no stack to report.
  return { kind: "Error", message: typeof err === "string" ? err : safeString(err) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
