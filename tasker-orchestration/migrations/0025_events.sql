-- Events (POST /v1/events): stored with what they started, in the transaction that starts it, so
-- no event is half-applied. An event starts a task of every template whose `on:` matches it; one
-- that matches nothing is kept all the same (visible, until retention removes it). `sender_id`
-- is the sender's own id: the same id in a namespace is the same event, and starts nothing again.
CREATE TABLE events (
    id          uuid        PRIMARY KEY,
    namespace   text        NOT NULL,
    name        text        NOT NULL,
    key         text,
    sender_id   text,
    data        jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    token_id    bigint,
    -- Per matching template: {"template": "ns/name@version", "task_id": ...} or
    -- {"template": ..., "refused": {"error": ..., "message": ...}}.
    started     jsonb       NOT NULL DEFAULT '[]'
);
CREATE UNIQUE INDEX events_sender_id ON events (namespace, sender_id) WHERE sender_id IS NOT NULL;
-- Newest first, in a namespace or all of them (ids are UUIDv7: time-ordered).
CREATE INDEX events_by_namespace ON events (namespace, id DESC);
