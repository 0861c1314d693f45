import { stringifyCoreJson, type JsonValue } from "./json";

/** A failure as the step records it. */
export interface StepError {
  /** The thrown error's `kind`, else its class name (`TypeError`, `PermanentError`, …), or a core kind (`timeout`, `unknown_handler`). */
  kind: string;
  message: string;
  backtrace?: string;
}

/** What a handler's run came to. */
export type OutcomeBody =
  | { status: "success"; result: JsonValue }
  | { status: "failure"; retryable: boolean; error: StepError; retry_after_ms?: number };

/**
 * The outcome of one job, in the wire format of the core's `complete` (the worker protocol's `outcome`); `started_at` and
 * `finished_at` are seconds since the epoch.
 */
export type Outcome = OutcomeBody & { id: number; started_at: number; finished_at: number };

/**
 * One outcome as JSON, a `bigint` marked for the core (see {@link stringifyCoreJson}). A result
 * that cannot be serialized (a cycle, a throwing `toJSON`) becomes a permanent failure of its own
 * step instead of failing the whole batch in the core.
 */
export function outcomeJson(outcome: Outcome): string {
  try {
    return stringifyCoreJson(outcome);
  } catch (err) {
    return JSON.stringify({
      id: outcome.id,
      status: "failure",
      retryable: false,
      error: {
        kind: "invalid_result",
        message: `the handler's result is not JSON: ${err instanceof Error ? err.message : String(err)}`,
      },
      started_at: outcome.started_at,
      finished_at: outcome.finished_at,
    });
  }
}
