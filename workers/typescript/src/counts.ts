// Counts by state for a task filter (`GET /v1/tasks?counts=true`): how many tasks of each state
// the filters of Client.listTasks match. {@link Client} has this call (it extends
// TaskCountMethods, which only needs it to send a generated request and read the answer).
// Semantics follow the Rust client (tasker-client's `task_counts`).
import { TaskerClientError } from "./client_errors";
import type { TaskQuery } from "./client_options";
import { taskQuery } from "./client_requests";
import * as api from "./generated/sdk.gen";
import { ClockMethods } from "./clock";
import type { TaskCounts, TaskPage } from "./task";

/** The filters of {@link TaskCountMethods.taskCounts}: those of `listTasks` but its state and page. */
export type TaskCountQuery = Pick<TaskQuery, "namespace" | "name" | "parent" | "createdAfter" | "createdBefore" | "context">;

/** The task counts call; {@link Client} extends this. */
export abstract class TaskCountMethods extends ClockMethods {
  /**
   * How many tasks of each state (`scheduled`, `running`, `complete`, `error`, `cancelled`, and
   * their `total`) the filters match (a page of one task with `counts: true`); the errors of
   * `listTasks`.
   */
  async taskCounts(query: TaskCountQuery = {}): Promise<TaskCounts> {
    const { namespace, name, parent, createdAfter, createdBefore, context } = query;
    const filters = { namespace, name, parent, createdAfter, createdBefore, context, limit: 1, counts: true };
    const page = await this.request<TaskPage>("TaskPage", (send) =>
      api.listTasks({ ...send, query: taskQuery(filters) }),
    );
    if (page.counts === null) throw new TaskerClientError("GET /v1/tasks?counts=true: the answer has no counts");
    return page.counts;
  }
}
