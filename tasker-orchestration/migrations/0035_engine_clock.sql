-- The engine's clock: every time a workflow runs by (waits, signal timeouts, retry backoffs,
-- deadlines, schedules, rate limits, start times, history) reads tasker_now() (one time per
-- transaction, as now()) or tasker_clock() (the time of the call, as clock_timestamp()).
-- In production they are now() and clock_timestamp(): one-expression SQL functions that the
-- planner inlines, so every plan is the one it was. An orchestrator in test mode
-- (`orchestrator.test_clock`) replaces them with the same clocks moved by tasker_test_clock's
-- skew, which a test advances (docs/testing.md). Operational times stay on the wall clock:
-- tokens, heartbeats, alerts, workers, dead letters, operations, ids.
CREATE OR REPLACE FUNCTION tasker_now() RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() $$;
CREATE OR REPLACE FUNCTION tasker_clock() RETURNS timestamptz
    LANGUAGE sql VOLATILE PARALLEL SAFE AS $$ SELECT clock_timestamp() $$;

-- How far a test has moved the engine's clock (one row; read only in test mode).
CREATE TABLE tasker_test_clock (
    id   int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    skew interval NOT NULL DEFAULT '0'
);
INSERT INTO tasker_test_clock DEFAULT VALUES;

ALTER TABLE tasks ALTER COLUMN created_at SET DEFAULT tasker_clock();
ALTER TABLE steps ALTER COLUMN created_at SET DEFAULT tasker_clock();
ALTER TABLE transitions ALTER COLUMN at SET DEFAULT tasker_clock();
ALTER TABLE signals ALTER COLUMN received_at SET DEFAULT tasker_clock();
ALTER TABLE schedules ALTER COLUMN created_at SET DEFAULT tasker_clock();
ALTER TABLE schedules ALTER COLUMN updated_at SET DEFAULT tasker_clock();
ALTER TABLE concurrency_slots ALTER COLUMN used_at SET DEFAULT tasker_now();
ALTER TABLE rate_limits ALTER COLUMN tat SET DEFAULT tasker_now();
ALTER TABLE rate_limits ALTER COLUMN used_at SET DEFAULT tasker_now();
ALTER TABLE events ALTER COLUMN received_at SET DEFAULT tasker_clock();
ALTER TABLE stream_attempts ALTER COLUMN last_at SET DEFAULT tasker_now();
