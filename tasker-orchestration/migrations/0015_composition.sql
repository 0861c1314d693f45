-- Composition: child workflows, steps routed to their own namespace, and the workers registry.

-- A child-workflow step (`child:` in a template): the orchestrator starts a task of another
-- template and the step ends as that task does.
ALTER DOMAIN tasker_step_type DROP CONSTRAINT tasker_step_type_names;
ALTER DOMAIN tasker_step_type
    ADD CONSTRAINT tasker_step_type_names
        CHECK (VALUE IN ('standard', 'decision', 'convergence', 'batchable', 'batch_worker',
                         'wait', 'child'));

-- A step's own namespace (NULL: its task's), the queue its messages go to; a child step's
-- specification (tasker_shared::compose::ChildSpec::compile, the template pinned) and, once
-- started, its child task. While the child runs the step is `enqueued` with `wake_at` =
-- infinity (held by the orchestrator, like a waiting step); the child's end wakes it.
ALTER TABLE steps ADD COLUMN namespace text, ADD COLUMN child jsonb, ADD COLUMN child_task_id uuid;

-- A child task knows its parent (task and step), its depth (0 for a task nobody started) and
-- what its parent's cancellation does to it; a parent knows it has children, so the trigger
-- that cascades a cancel runs only for tasks that have some.
ALTER TABLE tasks
    ADD COLUMN parent_task_id uuid,
    ADD COLUMN parent_step_id uuid,
    ADD COLUMN depth int NOT NULL DEFAULT 0,
    ADD COLUMN on_parent_cancel text CHECK (on_parent_cancel IN ('cancel', 'abandon')),
    ADD COLUMN has_children boolean NOT NULL DEFAULT false;
CREATE INDEX tasks_children ON tasks (parent_task_id) WHERE parent_task_id IS NOT NULL;

-- Workers as they report themselves (PUT /v1/workers/{id}, every heartbeat): what they serve
-- and when they were last seen. A worker is live while last_seen_at + 3 heartbeats is ahead.
CREATE TABLE workers (
    id           uuid PRIMARY KEY,
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 256),
    language     text NOT NULL CHECK (char_length(language) BETWEEN 1 AND 64),
    version      text NOT NULL CHECK (char_length(version) BETWEEN 1 AND 64),
    host         text NOT NULL CHECK (char_length(host) <= 256),
    pid          bigint NOT NULL,
    namespaces   text[] NOT NULL,
    handlers     text[] NOT NULL,
    concurrency  int NOT NULL,
    heartbeat_ms int NOT NULL CHECK (heartbeat_ms > 0),
    started_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    left_at      timestamptz,
    -- The credential that reported it (a token's name), so a worker can only update its own row.
    reported_by  text
);
CREATE INDEX workers_seen ON workers (last_seen_at);
