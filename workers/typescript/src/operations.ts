// Operations by filter (`/v1/operations`): retry, resolve or cancel every task a filter matches,
// or replay or discard every dead letter one matches, and follow the operation's progress.
// {@link Client} has these calls (it extends OperationMethods, which only needs it to send a
// generated request and read the answer); the answers' types are the document's
// (src/generated/types.gen.ts) in camelCase (`Camel`, client_wire.ts), the request is Tasker's
// own. Semantics follow the Rust client (tasker-client/src/operations.rs).
import { timestamp } from "./client_requests";
import { pause } from "./client_retry";
import type { Camel, SchemaName } from "./client_wire";
import type { Client as Generated } from "./generated/client";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import type { JsonObject, JsonValue } from "./json";
import type { TaskState } from "./task";

/** How often {@link OperationMethods.waitOperation} reads the operation's progress. */
const POLL_MS = 250;

/** What an operation does to each task (retry, resolve, cancel) or dead letter (replay, discard) it matched. */
export type OperationAction = wire.OperationAction;
/** Where an operation stands: `running` until it has finished, then one of the others. */
export type OperationState = wire.OperationState;

/**
 * Which tasks an operation acts on: every field given must match; none given, every task of the
 * states the action acts on (retry and resolve: `error`; cancel: `running` and `scheduled`) in
 * the namespaces the token covers. An operation's `filter` is one, to act on the same tasks again.
 * Replay and discard act on dead letters instead: `namespace`, `createdAfter` and `createdBefore`
 * (when it was first seen) apply to them too, `queue`, `reason` and `deadLetters` to them only,
 * the others to tasks only (`400 invalid_filter` for a field of the other kind).
 */
export interface OperationFilter {
  namespace?: string | null;
  /** The template's name. */
  name?: string | null;
  /** The template's version. */
  version?: string | null;
  /** retry and resolve take `error` only; cancel `running` or `scheduled`. */
  state?: TaskState | null;
  /** The step that failed the task, by name (for a task not in error, a step of that name in flight). */
  step?: string | null;
  /** The `kind` of the error that failed the task (`TimeoutError`, …). */
  errorKind?: string | null;
  /** Tasks created at or after this time (a `Date`, or an RFC 3339 string). */
  createdAfter?: Date | string | null;
  /** Tasks created strictly before this time. */
  createdBefore?: Date | string | null;
  /** Tasks whose context contains this JSON object. */
  context?: JsonObject | null;
  /** Only these tasks (at most 10,000 ids). */
  ids?: string[] | null;
  /** Dead letters from this queue (`<prefix>.results`, `<prefix>.steps.<namespace>`). */
  queue?: string | null;
  /** Dead letters whose reason starts with this (a code: `result_mismatch`, `malformed`, …). */
  reason?: string | null;
  /** Only these dead letters (at most 10,000 ids). */
  deadLetters?: number[] | null;
}

/** What {@link OperationMethods.startOperation} and {@link OperationMethods.countOperation} take. */
export interface StartOperationRequest {
  /**
   * `retry` (its failed step runs again), `resolve` (completed with `result`) or `cancel`; or, with
   * an admin token, `replay` (a dead letter goes back to the queue it came from) or `discard`
   * (it is deleted).
   */
  action: OperationAction;
  filter?: OperationFilter;
  /** Why; recorded in each task's history, with the operation's id. */
  reason?: string;
  /** Who asks; recorded in each task's history (with tokens, the token's name leads it). */
  by?: string;
  /** resolve only: the failed step's result, as its handler would have returned it (not `null`). */
  result?: JsonValue;
}

/** The filter as the answers give it: every field present, `null` when not given. */
type AppliedFilter = Omit<Camel<wire.OperationFilter>, "context"> & { context: JsonObject | null };

/**
 * An operation and its progress: of its `matched` tasks (or dead letters), `acted` were acted on
 * and `skipped` left (no longer in a state the action takes, purged, or outside the token's
 * namespaces; a dead letter that may never be replayed); `note` says why it `failed`, or who
 * `cancelled` it. `filter` is the one applied (the action's states filled in).
 */
export type Operation = Omit<Camel<wire.Operation>, "filter"> & { filter: AppliedFilter };
/**
 * What a dry run found: the exact count `matched` and a `sample` of up to 10 task ids, newest
 * first; for replay and discard, `deadLetterSample` of up to 10 dead letter ids instead (`null`
 * when the server left it out: a count of tasks, or of none).
 */
export type OperationCount = Omit<Camel<wire.OperationCount>, "filter"> & { filter: AppliedFilter };
/** One page of operations, newest first: `nextBefore` is the next page's `before` (`null` on the last). */
export type OperationList = Omit<Camel<wire.OperationList>, "operations"> & { operations: Operation[] };
/** An operation, or its id. */
export type OperationRef = string | Pick<Operation, "id">;

/** Whether an operation has ended (`complete`, `cancelled` or `failed`). */
export function isFinished(operation: Pick<Operation, "state">): boolean {
  return operation.state !== "running";
}

/** A filter as the API takes it: snake_case, times as RFC 3339. */
function filterBody(filter: OperationFilter): wire.OperationFilter {
  const { errorKind, createdAfter, createdBefore, deadLetters, ...same } = filter;
  const time = (t: Date | string | null | undefined) => (t === null || t === undefined ? t : timestamp(t));
  return {
    ...same,
    error_kind: errorKind,
    created_after: time(createdAfter),
    created_before: time(createdBefore),
    dead_letters: deadLetters,
  };
}

function startBody(request: StartOperationRequest, dryRun: boolean): wire.StartOperation {
  const { filter, ...rest } = request;
  return { ...rest, filter: filter === undefined ? undefined : filterBody(filter), dry_run: dryRun };
}

function operationId(operation: OperationRef): string {
  return typeof operation === "string" ? operation : operation.id;
}

/** What the generated request functions are given by the client. */
export interface Send {
  client: Generated;
  throwOnError: true;
  parseAs: "text";
}

/** The calls of operations by filter; {@link Client} extends this. */
export abstract class OperationMethods {
  /** Sends a generated request with the client's `Send` and reads its answer as the document's schema `name`. */
  protected abstract request<T>(name: SchemaName, send: (options: Send) => Promise<{ data: unknown }>): Promise<T>;

  /**
   * Starts an operation on every task `request.filter` matches in the namespaces the token covers
   * (`POST /v1/operations`), `reason` and `by` recorded in each task's history. Resolves at once
   * with the operation, `running`, and the exact count `matched`; the tasks are acted on in the
   * background, each once (follow it with {@link OperationMethods.waitOperation}). `replay` and
   * `discard` act so on every dead letter the filter matches (`queue`, `reason`, `deadLetters`,
   * …), counted in `matched`, `acted` and `skipped`. `400 invalid_action`, `invalid_filter` (also
   * a field of the other kind), `missing_result` (resolve without `result`), `invalid_result`;
   * `403 forbidden` for a namespace the token does not cover (or a replay or discard without an
   * admin token); `422 too_many_tasks` beyond the server's `operations.max_tasks` (narrow it by
   * creation time).
   */
  async startOperation(request: StartOperationRequest): Promise<Operation> {
    return this.request("Operation", (send) => api.startOperation({ ...send, body: startBody(request, false) }));
  }

  /**
   * What {@link OperationMethods.startOperation} would act on, acting on none (a dry run): the
   * exact count and a sample of the tasks (or dead letters), with the filter as it would be
   * applied. The same errors.
   */
  async countOperation(request: StartOperationRequest): Promise<OperationCount> {
    return this.request("OperationCount", (send) => api.startOperation({ ...send, body: startBody(request, true) }));
  }

  /** An operation and its progress (`404 operation_not_found`). */
  async operation(operation: OperationRef): Promise<Operation> {
    return this.#show(operationId(operation));
  }

  /**
   * One page of operations, newest first: `limit` (1–500, default 50) older than `before` (the
   * previous page's `nextBefore`). A token scoped to namespaces sees the ones it started.
   */
  async operations(page: { limit?: number; before?: string } = {}): Promise<OperationList> {
    return this.request("OperationList", (send) => api.listOperations({ ...send, query: { ...page } }));
  }

  /**
   * Cancels a running operation: the tasks it has not reached are left as they are (those it
   * acted on stay acted on). Resolves with it, `cancelled`; `409 operation_finished` once it ended.
   */
  async cancelOperation(operation: OperationRef): Promise<Operation> {
    const id = operationId(operation);
    return this.request("Operation", (send) => api.cancelOperation({ ...send, path: { id } }));
  }

  /**
   * Follows an operation until it has finished or `timeoutMs` has passed, reading it every 250 ms
   * and calling `onProgress` with each reading; resolves with the last one (check
   * {@link isFinished} to tell whether the time ran out). A failed read rejects at once; aborting
   * `signal` rejects with its reason.
   */
  async waitOperation(
    operation: OperationRef,
    timeoutMs: number,
    options: { onProgress?: (operation: Operation) => void; signal?: AbortSignal } = {},
  ): Promise<Operation> {
    if (Number.isNaN(timeoutMs)) throw new TypeError("waitOperation: timeoutMs is NaN");
    const id = operationId(operation);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const current = await this.#show(id, options.signal);
      options.onProgress?.(current);
      const left = deadline - performance.now();
      if (isFinished(current) || left <= 0) return current;
      await pause(Math.min(POLL_MS, left), options.signal);
    }
  }

  #show(id: string, signal?: AbortSignal): Promise<Operation> {
    return this.request("Operation", (send) => api.getOperation({ ...send, path: { id }, signal }));
  }
}
