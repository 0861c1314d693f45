-- Retention: finished tasks are purged some time after they end ([retention] per state, or
-- `tasker purge`), with their steps, edges, history, signals and dead letters
-- (tasker_purge_tasks). A purged task leaves a tombstone, so its id answers 410 task_purged
-- rather than 404 until the tombstone itself expires (retention.tombstones).

CREATE TABLE purged_tasks (
    id        uuid PRIMARY KEY,
    state     tasker_task_state NOT NULL,
    purged_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX purged_tasks_at ON purged_tasks (purged_at);

-- Finished tasks by state and completion time: each state's purge reads one range, oldest first.
CREATE INDEX tasks_finished ON tasks (state, completed_at) WHERE completed_at IS NOT NULL;

-- A task's signals, deleted with it; and the cascade from a deleted step to the signal it
-- consumed, which would otherwise scan the table once per step.
CREATE INDEX signals_by_task ON signals (task_id);
CREATE INDEX signals_consumed_by ON signals (consumed_by) WHERE consumed_by IS NOT NULL;
