-- Start controls (tasker_start_controls; docs/events.md).
--
-- A dedupe window: an idempotency key given a TTL answers its task until `expires_at`, even
-- after the task is purged. Its task's template and context are kept to tell a repeat from a
-- reused key. A key past its time is taken from its task (if still kept) by the next request
-- that uses it, or by retention.
CREATE TABLE task_keys (
    key         text        PRIMARY KEY,
    task_id     uuid        NOT NULL,
    template_id uuid        NOT NULL,
    context     jsonb       NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX task_keys_expiring ON task_keys (expires_at);

-- A debounce: the latest burst of requests of one template for one key (`key` is
-- "<template id>:<key>"), and the task it starts. A burst lasts while requests come less than
-- `period_ms` apart, and at most until `until` (its first request plus `max`); a trailing
-- burst's task waits `scheduled` meanwhile. Rows whose burst ended are removed by retention.
CREATE TABLE debounces (
    key         text        PRIMARY KEY,
    template_id uuid        NOT NULL,
    mode        text        NOT NULL CHECK (mode IN ('leading', 'trailing')),
    task_id     uuid        NOT NULL,
    first_at    timestamptz NOT NULL,
    last_at     timestamptz NOT NULL,
    until       timestamptz NOT NULL,
    period_ms   bigint      NOT NULL CHECK (period_ms > 0),
    requests    integer     NOT NULL
);
CREATE INDEX debounces_by_last ON debounces (last_at);
