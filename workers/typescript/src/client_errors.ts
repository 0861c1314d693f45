// The errors of {@link Client}: one base class, the API's refusals by status with its stable
// error code, and "no answer at all".
import { parseApiJson, type JsonValue } from "./json";
import type { ErrorCode } from "./task";

/** Every error a {@link Client} call rejects with (but a caller's own abort signal's reason). */
export class TaskerClientError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // The class name, also for subclasses, so stack traces and `err.name` say which.
    this.name = new.target.name;
  }
}

/**
 * The orchestrator answered with an error: `{"error": {"code", "message", "details"?}}`.
 * `code` is the API's stable code (`task_not_found`, `idempotency_key_reused`, …; `unknown`
 * for an answer that is not the API's JSON, e.g. from a proxy), `message` its message.
 */
export class ApiError extends TaskerClientError {
  /** The HTTP status. */
  readonly status: number;
  /** The API's stable error code (a newer server may add codes: then that string all the same). */
  readonly code: ErrorCode | "unknown";
  /** What some errors add (e.g. the problems of a `context_schema_violation`). */
  readonly details: JsonValue | undefined;

  constructor(status: number, code: ErrorCode | "unknown", message: string, details?: JsonValue) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** The error for an answer with a non-2xx `status` and body `text`, as its status's subclass. */
  static fromAnswer(status: number, text: string): ApiError {
    let code: ErrorCode | "unknown" = "unknown";
    let message = text.trim().slice(0, 200) || `HTTP ${status}`;
    let details: JsonValue | undefined;
    try {
      const error = (parseApiJson(text) as { error?: Record<string, JsonValue> } | null)?.error;
      if (typeof error?.code === "string") {
        code = error.code as ErrorCode;
        message = typeof error.message === "string" ? error.message : message;
        details = error.details;
      }
    } catch {
      // Not JSON: not the API's answer. The status and the start of the text are all there is.
    }
    const Class = errorClass(status);
    return new Class(status, code, message, details);
  }
}

/** 404: no such task, step, template, schedule or route (`task_not_found`, `schedule_not_found`, …). */
export class NotFoundError extends ApiError {}

/**
 * 410 `task_purged`: the retention policy purged the task ({@link Client.purge}), its record is
 * gone. `details` has its `task_id`, the `state` it ended in and `purged_at`. A
 * {@link NotFoundError}, as the id becomes once its tombstone expires (`404 task_not_found`).
 */
export class TaskPurgedError extends NotFoundError {}

/**
 * 409: the request conflicts with the current state (`task_not_running`,
 * `idempotency_key_reused`, `task_not_failed`, `step_not_failed`, `task_finished`,
 * `signal_conflict`, …).
 */
export class ConflictError extends ApiError {}

/**
 * 400, 413 or 422: the request itself is wrong (`invalid_id`, `invalid_wait`,
 * `context_schema_violation`, `invalid_result`, `body_too_large`, …); sending it again fails again.
 */
export class InvalidRequestError extends ApiError {}

/** 401 `unauthenticated` (no valid token) or 403 `forbidden` (the token's scope is too small). */
export class AuthError extends ApiError {}

/** 5xx: the orchestrator failed (`internal`) or cannot serve now (`storage_unavailable`, `broker_unavailable`: retry). */
export class ServerError extends ApiError {}

function errorClass(status: number): typeof ApiError {
  switch (status) {
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 410:
      return TaskPurgedError;
    case 400:
    case 413:
    case 422:
      return InvalidRequestError;
    case 401:
    case 403:
      return AuthError;
    default:
      return status >= 500 ? ServerError : ApiError;
  }
}

/**
 * No answer: the orchestrator cannot be reached (refused, unknown host), TLS failed (e.g. a
 * certificate no trusted CA signed), or it did not answer within the timeout. `cause` is the
 * underlying error.
 */
export class ConnectionError extends TaskerClientError {}
