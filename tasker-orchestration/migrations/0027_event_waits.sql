-- Wait steps that wait for an event (`wait: {event, match}`; docs/events.md). An event is taken
-- by at most one wait step (`consumed_by`), delivered to it as a signal named `event:<name>`.
-- One that arrives before a matching wait begins stays unconsumed, and the wait takes it when
-- it begins (the oldest received since its task was created).
ALTER TABLE events ADD COLUMN consumed_by uuid, ADD COLUMN consumed_at timestamptz;
CREATE INDEX events_unconsumed ON events (namespace, name, id) WHERE consumed_by IS NULL;

-- The event waits begun and not yet served: what each wants (the event's values at `paths`
-- equal to `vals`, its task's context values), in its task's namespace, from events received
-- since `since` (its task's creation). Gone with the step, or when an event serves it.
CREATE TABLE event_waits (
    step_id   uuid        PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    task_id   uuid        NOT NULL,
    namespace text        NOT NULL,
    name      text        NOT NULL,
    paths     jsonb       NOT NULL,
    vals      jsonb       NOT NULL,
    since     timestamptz NOT NULL,
    began_at  timestamptz NOT NULL
);
CREATE INDEX event_waits_by_event ON event_waits (namespace, name, began_at);
