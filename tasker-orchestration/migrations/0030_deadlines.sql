-- Deadlines (docs/time.md#deadlines): a task with `deadline_ms` may run that long from its
-- start; `deadline_at` is set when it starts (created running, or its `run_at` reached), and
-- the timers give a running task past it its `deadline_action` once, then clear it and record
-- `deadline_passed_at`.
ALTER TABLE tasks
    ADD COLUMN deadline_ms bigint CHECK (deadline_ms > 0),
    ADD COLUMN deadline_action text CHECK (deadline_action IN ('fail', 'cancel', 'alert')),
    ADD COLUMN deadline_at timestamptz,
    ADD COLUMN deadline_passed_at timestamptz;
-- Only running tasks with a deadline to come: a task that ends, or whose deadline passed,
-- leaves the index.
CREATE INDEX tasks_deadlines ON tasks (deadline_at)
    WHERE state = 'running' AND deadline_at IS NOT NULL;
