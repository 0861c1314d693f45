-- Which orchestrator dispatched a step's current attempt, and which orchestrators are alive.
-- A live orchestrator publishes what it dispatched (or keeps it for its next connection), so the
-- sweeper re-publishes only the steps of an orchestrator that stopped heartbeating: a crash
-- between commit and publish. A healthy step that runs longer than the visibility timeout is
-- never sent to a second worker.
CREATE TABLE orchestrators (
    id           uuid PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
ALTER TABLE steps ADD COLUMN dispatched_by uuid;
