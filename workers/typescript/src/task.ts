// What the orchestrator's API answers about tasks, as the client hands it out: the JSON's
// snake_case fields in camelCase, timestamps as `Date`. A task's context and results are the
// app's own data and pass through untouched.
import type { JsonObject, JsonValue } from "./json";
import type { StepError } from "./outcome";

/** A task's state; every one but `running` is terminal. */
export type TaskState = "running" | "complete" | "error" | "cancelled";

/** A step's state. */
export type StepState = "pending" | "enqueued" | "waiting_retry" | "completed" | "failed" | "skipped" | "cancelled";

/** Why a task ended in `error`: the step that failed it, its attempt and its error. */
export interface TaskFailure {
  step: string;
  attempt: number;
  error: StepError;
}

/**
 * A task. `Ctx` is the type of its context and `Res` of its result (the results of the steps
 * no other step depends on, by step name), both the app's to name.
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
}

/** A step of a task, with its result or error, attempts and per-hop times. */
export interface Step {
  id: string;
  name: string;
  handler: string;
  /** `standard`, `decision`, `convergence`, `batchable` or `batch_worker`, as the template says. */
  stepType: string;
  state: StepState;
  attempt: number;
  maxAttempts: number;
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
  return task.state !== "running";
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
  };
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
