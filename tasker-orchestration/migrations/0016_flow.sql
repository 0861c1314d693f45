-- Fair sharing: task priorities, concurrency limits per key and rate limits.
--
-- A step with limits (`steps.limits`, resolved from its template and its task's context when
-- the task is created) claims them when it is dispatched (tasker_claim): a concurrency slot
-- under the key's row lock, never by counting; a rate token from the key's GCRA row. A step
-- that gets neither waits `throttled` — not in flight, its attempt not yet counted — until a
-- slot frees (the releasing transaction marks the key to wake) or its reserved time comes
-- (`next_attempt_at`, on the orchestrator's timers).

ALTER DOMAIN tasker_step_state DROP CONSTRAINT tasker_step_state_names;
ALTER DOMAIN tasker_step_state
    ADD CONSTRAINT tasker_step_state_names
        CHECK (VALUE IN ('pending', 'throttled', 'enqueued', 'waiting_retry', 'completed',
                         'failed', 'skipped', 'cancelled'));
ALTER DOMAIN tasker_state DROP CONSTRAINT tasker_state_names;
ALTER DOMAIN tasker_state
    ADD CONSTRAINT tasker_state_names
        CHECK (VALUE IN ('scheduled', 'running', 'complete', 'error', 'cancelled', 'pending',
                         'enqueued', 'waiting_retry', 'completed', 'failed', 'skipped',
                         'throttled'));

-- 0 high, 1 normal, 2 low: smaller goes first. Existing tasks are normal (a constant default:
-- no rewrite); the range is checked for rows written from now on, so no scan of old tasks.
ALTER TABLE tasks ADD COLUMN priority smallint NOT NULL DEFAULT 1,
    ADD CONSTRAINT tasks_priority_range CHECK (priority BETWEEN 0 AND 2) NOT VALID;

-- `limits`: {"concurrency": {"key", "limit"}, "rate": {"key", "limit", "per_ms", "burst"}}.
-- `slot`: the concurrency key whose slot the step holds (from its claim until it leaves flight).
-- `throttle`: while throttled, what holds it: {"kind": "concurrency" | "rate" | "paused", "key",
--   "limit", "since", "until"}; for a rate wait, its token is reserved for `until`.
-- `throttled_on` / `throttle_order`: the concurrency key it waits for and its place in that
--   queue: the time it began to wait, later by the priority aging per priority level.
ALTER TABLE steps
    ADD COLUMN limits jsonb,
    ADD COLUMN slot text,
    ADD COLUMN throttle jsonb,
    ADD COLUMN throttled_on text,
    ADD COLUMN throttle_order timestamptz;
CREATE INDEX steps_throttled_on ON steps (throttled_on, throttle_order)
    WHERE state = 'throttled' AND throttled_on IS NOT NULL;
CREATE INDEX steps_throttled_due ON steps (next_attempt_at)
    WHERE state = 'throttled' AND next_attempt_at IS NOT NULL;
CREATE INDEX steps_holding ON steps (slot) WHERE slot IS NOT NULL;

-- One row per concurrency key: its limit and the slots in use, changed only under the row's
-- lock. `wake`: a slot was freed and a step may be waiting for it.
CREATE TABLE concurrency_slots (
    key     text PRIMARY KEY CHECK (octet_length(key) <= 1024),
    lim     int NOT NULL CHECK (lim > 0),
    in_use  int NOT NULL DEFAULT 0 CHECK (in_use >= 0),
    wake    boolean NOT NULL DEFAULT false,
    used_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX concurrency_slots_wake ON concurrency_slots (key) WHERE wake;
CREATE INDEX concurrency_slots_in_use ON concurrency_slots (key) WHERE in_use > 0;
CREATE INDEX concurrency_slots_used ON concurrency_slots (used_at);

-- One row per rate key: GCRA's theoretical arrival time `tat` (a token every per_ms / lim,
-- `burst` at once) and an operator's pause.
CREATE TABLE rate_limits (
    key          text PRIMARY KEY CHECK (octet_length(key) <= 128),
    lim          int NOT NULL CHECK (lim > 0),
    per_ms       bigint NOT NULL CHECK (per_ms > 0),
    burst        int NOT NULL CHECK (burst > 0),
    tat          timestamptz NOT NULL DEFAULT now(),
    paused_until timestamptz,
    pause_note   text CHECK (char_length(pause_note) <= 1000),
    paused_by    text,
    used_at      timestamptz NOT NULL DEFAULT now()
);
