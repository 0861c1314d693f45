import { stepContext, type Job, type PageReader } from "./context";
import { isPermanent, retryAfterMs } from "./errors";
import type { Registry } from "./handler";
import type { JsonValue } from "./json";
import type { Outcome, OutcomeBody, StepError } from "./outcome";

/**
 * Runs one job's handler and never throws: every result, throw, rejection or timeout becomes an
 * outcome. Resolves by the job's timeout at the latest, so a hung handler frees its slot (its
 * `signal` aborts; whatever it does afterwards is ignored). `pages` reads parent results the job
 * carries by reference.
 */
export async function execute(registry: Registry, job: Job, pages?: PageReader): Promise<Outcome> {
  // Seconds since the epoch, as the core takes them (cheaper than formatting a date).
  const startedAt = Date.now() / 1000;
  const finish = (body: OutcomeBody): Outcome => ({
    id: job.id,
    ...body,
    started_at: startedAt,
    finished_at: Date.now() / 1000,
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
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), job.timeout_ms);
  });
  try {
    // `async` turns a synchronous throw into a rejection, so sync and async handlers fail alike.
    const call = (async () => fn(stepContext(job, abort.signal, pages)))();
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
    clearTimeout(timer);
  }
}

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
