-- Tasker's state: registered templates, tasks, their steps and edges, and an append-only history.
-- Per-step work is constant: each step carries counters of its parents (pending, skipped) and
-- each task a counter of its open steps, so advancing a step never scans the whole DAG.

CREATE TABLE task_templates (
    id            uuid PRIMARY KEY,
    namespace     text        NOT NULL,
    name          text        NOT NULL,
    version       text        NOT NULL,
    description   text,
    definition    jsonb       NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (namespace, name, version)
);

CREATE TABLE tasks (
    id              uuid PRIMARY KEY,
    template_id     uuid        NOT NULL REFERENCES task_templates (id),
    namespace       text        NOT NULL,
    name            text        NOT NULL,
    version         text        NOT NULL,
    state           text        NOT NULL,
    context         jsonb       NOT NULL,
    idempotency_key text UNIQUE,
    -- Steps not yet terminal; the task completes when this reaches zero.
    open_steps      integer     NOT NULL,
    error           jsonb,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    completed_at    timestamptz
);
CREATE INDEX tasks_by_state ON tasks (state, id DESC);
CREATE INDEX tasks_by_namespace ON tasks (namespace, id DESC);

CREATE TABLE steps (
    id              uuid PRIMARY KEY,
    task_id         uuid        NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name            text        NOT NULL,
    handler         text        NOT NULL,
    step_type       text        NOT NULL,
    branches        jsonb       NOT NULL DEFAULT '[]',
    state           text        NOT NULL,
    attempt         integer     NOT NULL DEFAULT 0,
    max_attempts    integer     NOT NULL,
    backoff         text        NOT NULL,
    base_ms         bigint      NOT NULL,
    max_ms          bigint      NOT NULL,
    timeout_ms      bigint      NOT NULL,
    parent_count    integer     NOT NULL,
    pending_parents integer     NOT NULL,
    skipped_parents integer     NOT NULL DEFAULT 0,
    -- A batch_worker instance's batch; a batchable step's instantiation spec (its batch_worker
    -- template: handler, policies, children); what a failed batch does to its task.
    input           jsonb,
    batch_spec      jsonb,
    on_failure      text        NOT NULL DEFAULT 'fail_task',
    -- Publications of the current attempt; the sweeper re-publishes an attempt at most once.
    publish_count   integer     NOT NULL DEFAULT 0,
    result          jsonb,
    error           jsonb,
    worker          text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    dispatched_at   timestamptz,
    started_at      timestamptz,
    finished_at     timestamptz,
    processed_at    timestamptz,
    next_attempt_at timestamptz,
    UNIQUE (task_id, name)
);
-- The sweeper's look-ups touch only in-flight and retrying steps.
CREATE INDEX steps_in_flight ON steps (dispatched_at) WHERE state = 'enqueued';
CREATE INDEX steps_retry_due ON steps (next_attempt_at) WHERE state = 'waiting_retry';

CREATE TABLE step_edges (
    task_id   uuid NOT NULL,
    parent_id uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    child_id  uuid NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX step_edges_by_child ON step_edges (child_id);

-- Append-only: every task and step state change, with when and why.
CREATE TABLE transitions (
    id         bigserial PRIMARY KEY,
    task_id    uuid        NOT NULL,
    step_id    uuid,
    from_state text,
    to_state   text        NOT NULL,
    attempt    integer,
    reason     text,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX transitions_by_task ON transitions (task_id, id);
