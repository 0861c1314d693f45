-- Workflows in time: tasks that start later, wait steps (sleeps and signals), schedules.
--
-- Every timer lives here, never in the broker or in a process's memory: a task's `run_at`, a
-- waiting step's `wake_at`, a schedule's `next_fire_at`. Each has a partial index holding only
-- the rows that can still fire, so an orchestrator's timer reads what is due with one indexed
-- query however many tasks sleep.

-- The vocabulary grows: a task `scheduled` to start later; a `wait` step. A waiting step is
-- `enqueued` (in flight, its attempt set) with a `wake_at`, held by the orchestrator instead
-- of a worker, so results, cancels, repairs and retries treat it as any step in flight.
ALTER DOMAIN tasker_task_state DROP CONSTRAINT tasker_task_state_names;
ALTER DOMAIN tasker_task_state
    ADD CONSTRAINT tasker_task_state_names
        CHECK (VALUE IN ('scheduled', 'running', 'complete', 'error', 'cancelled'));
ALTER DOMAIN tasker_state DROP CONSTRAINT tasker_state_names;
ALTER DOMAIN tasker_state
    ADD CONSTRAINT tasker_state_names
        CHECK (VALUE IN ('scheduled', 'running', 'complete', 'error', 'cancelled', 'pending',
                         'enqueued', 'waiting_retry', 'completed', 'failed', 'skipped'));
ALTER DOMAIN tasker_step_type DROP CONSTRAINT tasker_step_type_names;
ALTER DOMAIN tasker_step_type
    ADD CONSTRAINT tasker_step_type_names
        CHECK (VALUE IN ('standard', 'decision', 'convergence', 'batchable', 'batch_worker',
                         'wait'));

-- A task created to start later.
ALTER TABLE tasks ADD COLUMN run_at timestamptz;
CREATE INDEX tasks_starting ON tasks (run_at) WHERE state = 'scheduled';

-- A wait step's specification (tasker_shared::time::WaitSpec::compile) and, while it waits,
-- when it wakes: its sleep's end, its signal's timeout, or now when its signal has arrived.
ALTER TABLE steps ADD COLUMN wait jsonb, ADD COLUMN wake_at timestamptz;
CREATE INDEX steps_waking ON steps (wake_at) WHERE state = 'enqueued' AND wake_at IS NOT NULL;
-- The sweeper's index of steps in flight at workers (past their queue timeout, lost with their
-- orchestrator) leaves waiting steps out: 10,000 tasks asleep cost a sweep nothing.
CREATE INDEX steps_sent ON steps (dispatched_at) WHERE state = 'enqueued' AND wake_at IS NULL;
DROP INDEX steps_in_flight;

-- Signals sent to tasks, kept until a wait step consumes them (one signal, one step), so a
-- signal that arrives before its wait begins is not lost. `signal_id` makes sending
-- idempotent per task.
CREATE TABLE signals (
    task_id     uuid NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    signal_id   text NOT NULL CHECK (char_length(signal_id) BETWEEN 1 AND 128),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    payload     jsonb NOT NULL DEFAULT 'null',
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    consumed_by uuid REFERENCES steps (id) ON DELETE CASCADE,
    consumed_at timestamptz,
    PRIMARY KEY (task_id, signal_id)
);
CREATE INDEX signals_waiting ON signals (task_id, name, received_at) WHERE consumed_by IS NULL;

-- Schedules: a cron expression in a time zone that starts tasks of a template. The fire of a
-- nominal time and the advance of `next_fire_at` commit together, and the task a fire starts
-- has the idempotency key `schedule:<id>:<nominal time>`, so any number of orchestrators start
-- exactly one task per schedule and nominal time.
CREATE TABLE schedules (
    id           uuid PRIMARY KEY,
    namespace    text NOT NULL,
    name         text NOT NULL,
    template     text NOT NULL,
    version      text,
    cron         text NOT NULL CHECK (char_length(cron) BETWEEN 1 AND 256),
    timezone     text NOT NULL CHECK (char_length(timezone) BETWEEN 1 AND 64),
    context      jsonb NOT NULL DEFAULT '{}',
    overlap      text NOT NULL
                 CHECK (overlap IN ('skip', 'allow', 'buffer_one', 'cancel_previous')),
    catch_up_ms  bigint NOT NULL CHECK (catch_up_ms >= 0),
    paused       boolean NOT NULL DEFAULT false,
    note         text CHECK (char_length(note) <= 1024),
    next_fire_at timestamptz,
    -- Under `buffer_one`: the nominal time of the fire waiting for the open task to end.
    buffered_at  timestamptz,
    last_fire_at timestamptz,
    last_task_id uuid,
    fires        bigint NOT NULL DEFAULT 0,
    skipped      bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_by   text CHECK (char_length(updated_by) BETWEEN 1 AND 256),
    UNIQUE (namespace, name)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;
-- Under `buffer_one`, a schedule with a fire waiting for its open task to end.
CREATE INDEX schedules_buffered ON schedules (buffered_at) WHERE buffered_at IS NOT NULL AND NOT paused;
