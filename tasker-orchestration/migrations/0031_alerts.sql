-- Alerts out (docs/events.md "Alerts out"): rules saved by name, one namespace each, that watch a
-- condition of it (`condition`: {kind, template?, schedule?, count?, within?, longer_than?}) and
-- tell a sink (`sink`: {kind: webhook | slack, url}) when it begins to hold and when it clears.
-- The orchestrators check the rules due (`next_check_at`) every second, each rule in one
-- transaction at a time (FOR UPDATE SKIP LOCKED), as the token that saved it (`token_id`,
-- looked up again at each check). `secret` signs a webhook sink's notices (an HMAC key: kept as
-- given, as webhooks' are). `notified`: this firing's notice went out (not suppressed), so its
-- clearing is told too; `noticed_at`: when the last firing notice was queued (suppression).
CREATE TABLE alert_rules (
    name          text        PRIMARY KEY,
    namespace     text        NOT NULL,
    condition     jsonb       NOT NULL,
    sink          jsonb       NOT NULL,
    secret        text,
    suppress_ms   bigint      NOT NULL CHECK (suppress_ms >= 0),
    token_id      bigint,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    firing        boolean     NOT NULL DEFAULT false,
    notified      boolean     NOT NULL DEFAULT false,
    observed      bigint,
    checked_at    timestamptz,
    next_check_at timestamptz NOT NULL DEFAULT now(),
    fired_at      timestamptz,
    resolved_at   timestamptz,
    noticed_at    timestamptz,
    sent          bigint      NOT NULL DEFAULT 0,
    failed        bigint      NOT NULL DEFAULT 0,
    suppressed    bigint      NOT NULL DEFAULT 0,
    last_error    text
);
CREATE INDEX alert_rules_due ON alert_rules (next_check_at);

-- The notices on their way out: written in the transaction that decided them, sent after by
-- whichever orchestrator takes them (a lease in `next_attempt_at`), retried with backoff, and
-- given up on (`failed_at`) after their last attempt. Kept a day after they end.
CREATE TABLE alert_notices (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule            text        NOT NULL REFERENCES alert_rules (name) ON DELETE CASCADE,
    payload         jsonb       NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    failed_at       timestamptz,
    error           text
);
CREATE INDEX alert_notices_due ON alert_notices (next_attempt_at)
    WHERE sent_at IS NULL AND failed_at IS NULL;

-- What two conditions count: deadlines passed lately, and schedules' skipped fires lately.
CREATE INDEX tasks_deadline_passed ON tasks (deadline_passed_at)
    WHERE deadline_passed_at IS NOT NULL;
ALTER TABLE schedules ADD COLUMN last_skipped_at timestamptz;
