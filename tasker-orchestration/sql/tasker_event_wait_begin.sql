-- Begins the event wait of step `step` (task `task`, dispatched at `began`; tasker_begin_waits
-- holds its lock) and returns when it wakes: now, when an event it matches is waiting already
-- (the oldest received since its task was created, not taken by another step: it takes it);
-- else its timeout, and the wait is registered for the events to come (event_waits). A wait
-- whose context lacks a value its `match` reads is not registered: it ends at its timeout.
-- Events of one name and namespace are given out under one advisory lock (here and in
-- tasker_deliver_events), so an event and a wait that begin together never miss each other.
CREATE OR REPLACE FUNCTION tasker_event_wait_begin(step uuid, task uuid, wait jsonb,
                                                   began timestamptz)
RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
    t record;
    vals jsonb;
    event_paths jsonb;
    context_paths jsonb;
    found_event events;
BEGIN
    SELECT namespace, context, created_at INTO t FROM tasks WHERE id = task;
    PERFORM pg_advisory_xact_lock(hashtextextended(
        'tasker_event:' || t.namespace || '/' || (wait->>'event'), 0));
    SELECT COALESCE(jsonb_agg(p->0 ORDER BY o), '[]'), COALESCE(jsonb_agg(p->1 ORDER BY o), '[]')
    INTO event_paths, context_paths
    FROM jsonb_array_elements(wait->'match') WITH ORDINALITY AS x(p, o);
    vals := tasker_event_values(t.context, context_paths);
    IF vals @> '[null]' THEN
        RETURN began + make_interval(secs => (wait->>'timeout_ms')::float8 / 1000);
    END IF;
    SELECT * INTO found_event FROM events e
    WHERE e.namespace = t.namespace AND e.name = wait->>'event' AND e.consumed_by IS NULL
      AND e.received_at >= t.created_at
      AND tasker_event_values(tasker_event_doc(e), event_paths) = vals
    ORDER BY e.id LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
        PERFORM tasker_event_take(found_event, step, task);
        RETURN tasker_clock();
    END IF;
    INSERT INTO event_waits (step_id, task_id, namespace, name, paths, vals, since, began_at)
    VALUES (step, task, t.namespace, wait->>'event', event_paths, vals, t.created_at, began)
    ON CONFLICT (step_id) DO NOTHING;
    RETURN began + make_interval(secs => (wait->>'timeout_ms')::float8 / 1000);
END
$$;
