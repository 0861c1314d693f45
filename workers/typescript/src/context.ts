import type { JsonObject, JsonValue } from "./json";

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
  /** Results of the step's completed parents, by step name. */
  parentResults: JsonObject;
  /** A batch worker's batch (what its batchable parent returned for it); null otherwise. */
  input: JsonValue;
  /** The step's timeout; past it the attempt fails (retryably) and `signal` aborts. */
  timeoutMs: number;
  /** Aborted when the attempt times out: pass it to fetch, timers, child processes… */
  signal: AbortSignal;
}

/** A job as the native core hands it over (snake_case, as serialized by the Rust core). */
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
  /** Absent unless the step is a batch worker (and on cores that predate batches). */
  input?: JsonValue;
  timeout_ms: number;
}

export function stepContext(job: Job, signal: AbortSignal): StepContext {
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
    parentResults: job.parent_results,
    input: job.input ?? null,
    timeoutMs: job.timeout_ms,
    signal,
  };
}
