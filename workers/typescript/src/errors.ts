const PERMANENT = Symbol.for("tasker.permanent_error");
const RETRY_AFTER = Symbol.for("tasker.retry_after_ms");

/** What a {@link PermanentError} or {@link RetryableError} may name. */
export interface HandlerErrorOptions extends ErrorOptions {
  /**
   * The failure's kind, recorded with the step (`rate_limited`, `validation`); by default the
   * error's class name.
   */
  kind?: string;
}

/** What a {@link RetryableError} may ask for. */
export interface RetryableErrorOptions extends HandlerErrorOptions {
  /**
   * The next attempt's delay in seconds, in place of the template's backoff (a rate limit's
   * `Retry-After`), at most a day.
   */
  retryAfter?: number;
  /** @deprecated The same in milliseconds; use {@link retryAfter} (seconds). */
  retryAfterMs?: number;
}

/**
 * Throw it from a handler to fail the step for good: no retry, whatever the template's retry
 * policy. Any other thrown error is retried. The step's error records `kind` (by default the
 * class name, so subclasses like `class InvalidOrder extends PermanentError {}` name the failure).
 */
export class PermanentError extends Error {
  readonly kind: string;

  constructor(message: string, options?: HandlerErrorOptions) {
    super(message, options);
    // The class name, also for subclasses, so `err.name` matches the reported kind.
    this.name = new.target.name;
    this.kind = options?.kind || new.target.name;
    // Marks permanence without `instanceof`, which fails across two copies of this package.
    Object.defineProperty(this, PERMANENT, { value: true });
  }
}

/**
 * Thrown by `ctx.emit` and `ctx.emitText` when a chunk is not taken. Its `kind`:
 * `invalid_stream_chunk` (a topic of 1 to 100 characters, at most 256 KiB, JSON data; the stream
 * goes on), `stream_too_large` (the attempt streamed `worker.max_stream_bytes`: the step fails
 * with it whatever the handler does), `stream_closed` (the attempt ended). Left to propagate, it
 * fails the step permanently with that kind.
 */
export class StreamError extends PermanentError {}

/**
 * Throw it to fail the attempt and have the step retried, naming the failure's `kind` and, if
 * the handler knows better than the template's backoff, when the next attempt runs:
 * `throw new RetryableError("429 from the payment API", { kind: "rate_limited", retryAfter: 30 })`.
 * Any other thrown error is retried too, after the template's backoff.
 */
export class RetryableError extends Error {
  readonly kind: string;
  /** The delay asked for, in seconds. */
  readonly retryAfter: number | undefined;

  constructor(message: string, options?: RetryableErrorOptions) {
    super(message, options);
    const seconds = options?.retryAfter;
    if (seconds !== undefined && !(Number.isFinite(seconds) && seconds >= 0)) {
      throw new RangeError(`retryAfter must be a number of seconds, at least 0, not ${seconds}`);
    }
    const ms = options?.retryAfterMs;
    if (ms !== undefined && !(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(`retryAfterMs must be a number of milliseconds, at least 0, not ${ms}`);
    }
    const delay = seconds !== undefined ? seconds * 1000 : ms;
    this.name = new.target.name;
    this.kind = options?.kind || new.target.name;
    this.retryAfter = delay === undefined ? undefined : delay / 1000;
    // Read without `instanceof`, like PERMANENT.
    Object.defineProperty(this, RETRY_AFTER, { value: delay });
  }

  /** @deprecated The delay asked for in milliseconds; use {@link retryAfter} (seconds). */
  get retryAfterMs(): number | undefined {
    return this.retryAfter === undefined ? undefined : this.retryAfter * 1000;
  }
}

/** Whether `err` is a {@link PermanentError} (from any copy of this package). */
export function isPermanent(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { [PERMANENT]?: unknown })[PERMANENT] === true;
}

/** The delay a {@link RetryableError} (from any copy of this package) asks for, if any. */
export function retryAfterMs(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const delay = (err as { [RETRY_AFTER]?: unknown })[RETRY_AFTER];
  return typeof delay === "number" ? delay : undefined;
}

/**
 * A step's parent results could not be read from the orchestrator. Thrown by
 * `ctx.parentResults`; like any error but {@link PermanentError}, the step is retried, with
 * kind `reference_unavailable` as in every language.
 */
export class ReferenceUnavailable extends Error {
  readonly kind = "reference_unavailable";

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ReferenceUnavailable";
  }
}
