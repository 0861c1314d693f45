-- Bounds on what a request may cost (docs/auth.md).
--
-- The task list's `context` filter (`GET /v1/tasks?context=…`, `t.context @> $1`) read every
-- task's context: a 100 KB filter of large arrays took seconds of database time. A GIN index
-- of the contexts' paths and values (jsonb_path_ops: containment only, smaller and faster than
-- the default operator class) finds the candidates; the statement timeout of list queries
-- bounds what is left. Building it holds task creation for as long as it takes; on a large
-- table, create it beforehand without that lock and this migration keeps it:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS tasks_context_paths
--       ON tasks USING gin (context jsonb_path_ops);
CREATE INDEX IF NOT EXISTS tasks_context_paths ON tasks USING gin (context jsonb_path_ops);

-- Backfills of a schedule in the current hour: claimed under the schedule's row lock (the
-- backfill's own transaction), at most `orchestrator.max_backfills_per_hour`.
ALTER TABLE schedules
    ADD COLUMN backfills int NOT NULL DEFAULT 0,
    ADD COLUMN backfills_since timestamptz;
