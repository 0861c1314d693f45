// One attempt of a step as its handler received it (`GET /v1/tasks/{id}/steps/{step}/inputs`):
// what `replay` of `tasker-workflows/testing` runs a local handler on. {@link Client} has this
// call (it extends StepInputMethods). Semantics follow the Rust client's `step_inputs`.
import type { TaskRef } from "./client_options";
import { taskId } from "./client_requests";
import type { Camel } from "./client_wire";
import * as api from "./generated/sdk.gen";
import type * as wire from "./generated/types.gen";
import { OperationMethods } from "./operations";

/** A step's recorded inputs, camelCased as every answer of the client. */
export type StepInputs = Camel<wire.StepInputs>;

/** The step inputs call; {@link Client} extends this. */
export abstract class StepInputMethods extends OperationMethods {
  /**
   * One attempt of `step` (its name or id; the latest unless `attempt`) as its handler received
   * it — context, parent results, batch, attempt — with the step's type, retry policy and
   * latest error. `409 not_replayable` for a wait or child step, or one that has not run.
   */
  async stepInputs(task: TaskRef<unknown, unknown>, step: string, options: { attempt?: number } = {}): Promise<StepInputs> {
    return this.request<StepInputs>("StepInputs", (send) =>
      api.stepInputs({ ...send, path: { id: taskId(task), step }, query: { ...options } }),
    );
  }
}
