-- Operations by filter: retry, resolve or cancel every task a filter matched, in batches, by
-- whichever orchestrator holds the operation's lease. The tasks matched are written down when
-- the operation is created (operation_tasks), so the count is exact and stays so, and each
-- task's outcome is recorded in the transaction that acts on it: an operation resumed after its
-- orchestrator died acts on each task once.
CREATE TABLE operations (
    id          uuid PRIMARY KEY,
    action      text        NOT NULL CHECK (action IN ('retry', 'resolve', 'cancel')),
    filter      jsonb       NOT NULL,
    -- resolve: the failed step's result.
    resolution  jsonb,
    reason      text CHECK (char_length(reason) BETWEEN 1 AND 1000),
    actor       text CHECK (char_length(actor) BETWEEN 1 AND 256),
    -- The token that started it, judged again before every batch (NULL: tokens off).
    token_id    bigint,
    state       text        NOT NULL DEFAULT 'running'
                CHECK (state IN ('running', 'complete', 'cancelled', 'failed')),
    matched     bigint      NOT NULL,
    acted       bigint      NOT NULL DEFAULT 0,
    skipped     bigint      NOT NULL DEFAULT 0,
    -- Why it failed, or who cancelled it.
    note        text,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    -- The orchestrator running it, until lease_until: another one takes it over after that.
    owner       uuid,
    lease_until timestamptz
);
CREATE INDEX operations_running ON operations (id) WHERE state = 'running';

-- No foreign key to tasks: retention may purge a task an operation matched (its outcome is then
-- task_not_found); the rows go with their operation.
CREATE TABLE operation_tasks (
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    task_id      uuid NOT NULL,
    -- NULL until acted on: done, or the code of why the task was left (task_not_failed, ...).
    outcome      text,
    PRIMARY KEY (operation_id, task_id)
);
CREATE INDEX operation_tasks_left ON operation_tasks (operation_id, task_id) WHERE outcome IS NULL;
