const PERMANENT = Symbol.for("tasker.permanent_error");

/**
 * Throw it from a handler to fail the step for good: no retry, whatever the template's retry
 * policy. Any other thrown error is retried. The step's error records the class name as its
 * `kind`, so subclasses (`class InvalidOrder extends PermanentError {}`) name the failure.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    // The class name, also for subclasses, so `err.name` matches the reported kind.
    this.name = new.target.name;
    // Marks permanence without `instanceof`, which fails across two copies of this package.
    Object.defineProperty(this, PERMANENT, { value: true });
  }
}

/** Whether `err` is a {@link PermanentError} (from any copy of this package). */
export function isPermanent(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { [PERMANENT]?: unknown })[PERMANENT] === true;
}

/**
 * A step's parent results could not be read from the orchestrator. Thrown by
 * `ctx.parentResults`; like any error but {@link PermanentError}, the step is retried.
 */
export class ReferenceUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ReferenceUnavailable";
  }
}
