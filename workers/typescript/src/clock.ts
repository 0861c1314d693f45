// The engine's clock (`/v1/clock`): reading it, and in test mode (`tasker-orchestrator test-env`,
// what `WorkflowEnv` of `tasker-workflows/testing` starts) moving it and waiting for a task with
// time skipping. {@link Client} has these calls (it extends ClockMethods). Semantics follow the
// Rust client's `clock`, `advance_clock`, `skip_clock` and `wait_skipping`.
import type { TaskRef } from "./client_options";
import { taskId } from "./client_requests";
import type { Camel } from "./client_wire";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import type { JsonObject } from "./json";
import { StepInputMethods } from "./step_inputs";
import { isTerminal, type Task } from "./task";

/** The engine's clock, camelCased as every answer of the client. */
export type Clock = Camel<wire.Clock>;
/** What a skip did. */
export type Skipped = Camel<wire.Skipped>;

/** How long one look at the task lasts before the clock may skip, in milliseconds. */
const LOOK_MS = 20;

/** The clock calls; {@link Client} extends this. */
export abstract class ClockMethods extends StepInputMethods {
  /** The engine's clock: its time, skew, next timer and whether a step is with a worker. */
  async clock(): Promise<Clock> {
    return this.request<Clock>("Clock", (send) => api.getClock({ ...send }));
  }

  /**
   * Test mode (admin): moves the engine's clock forward by `by` (`"7d"`, `"90s"`); every timer
   * then due has rung when it answers. `409 test_clock_off` on an orchestrator not in test mode.
   */
  async advanceClock(by: string): Promise<Clock> {
    return this.request<Clock>("Clock", (send) => api.advanceClock({ ...send, body: { by } }));
  }

  /** Test mode (admin): moves the clock to its next timer when no step is with a worker. */
  async skipClock(): Promise<Skipped> {
    return this.request<Skipped>("Skipped", (send) => api.skipClock({ ...send }));
  }

  /**
   * Test mode: waits up to `timeoutMs` of wall time for a task to end, skipping the clock to its
   * next timer whenever no step is with a worker; resolves with the task as it is then.
   */
  async waitSkipping<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>, timeoutMs: number): Promise<Task<Ctx, Res>> {
    const id = taskId(task);
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const left = Math.max(0, deadline - performance.now());
      const current = await this.wait<Ctx, Res>(id, Math.min(left, LOOK_MS));
      if (isTerminal(current) || left === 0) return current;
      await this.skipClock();
    }
  }

  abstract wait<Ctx = JsonObject, Res = JsonObject>(task: TaskRef<Ctx, Res>, timeoutMs: number): Promise<Task<Ctx, Res>>;
}
