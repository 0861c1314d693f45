-- The two ways a step is in flight (`enqueued`, its attempt set), named once:
--   held by the orchestrator — it has a wake time (`wake_at`): a wait step waiting for its
--     time, its signal or its deadline, a child step whose child task runs (wake_at =
--     infinity until the child's end wakes it). No worker has it; the timers resolve it when
--     its wake comes (tasker_wake).
--   sent to a worker — no wake time: its message went (or goes) to its namespace's queue.
-- Plain SQL over the row, so PostgreSQL inlines them: `WHERE tasker_held(s)` is the predicate
-- of the partial indexes steps_waking and steps_sent (migration 0014) and is planned as such.
CREATE OR REPLACE FUNCTION tasker_held(s steps) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT s.state = 'enqueued' AND s.wake_at IS NOT NULL
$$;

CREATE OR REPLACE FUNCTION tasker_sent(s steps) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT s.state = 'enqueued' AND s.wake_at IS NULL
$$;
