-- Gives each of the events `ids` (just stored, in the caller's transaction) to the event wait
-- it matches, if any: the oldest-begun wait of its namespace and name, still waiting, whose
-- task was created before it and whose values it has. One event serves one wait, one wait
-- takes one event; an event no wait takes stays for a wait that begins later. Locks each name
-- of the batch (sorted) as tasker_event_wait_begin does. Returns the steps woken.
CREATE OR REPLACE FUNCTION tasker_deliver_events(ids uuid[])
RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
    e events;
    w record;
    woken uuid[] := '{}';
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('tasker_event:' || n.k, 0))
    FROM (SELECT DISTINCT namespace || '/' || name AS k FROM events WHERE id = ANY (ids)
          ORDER BY 1) n;
    FOR e IN
        SELECT * FROM events ev WHERE ev.id = ANY (ids) AND ev.consumed_by IS NULL
          AND EXISTS (SELECT 1 FROM event_waits x
                      WHERE x.namespace = ev.namespace AND x.name = ev.name)
        ORDER BY ev.id
    LOOP
        SELECT x.step_id, x.task_id INTO w
        FROM event_waits x JOIN steps s ON s.id = x.step_id
        WHERE x.namespace = e.namespace AND x.name = e.name AND x.since <= e.received_at
          AND tasker_held(s)
          AND tasker_event_values(tasker_event_doc(e), x.paths) = x.vals
        ORDER BY x.began_at, x.step_id LIMIT 1
        FOR UPDATE OF s SKIP LOCKED;
        IF FOUND THEN
            PERFORM tasker_event_take(e, w.step_id, w.task_id);
            woken := woken || w.step_id;
        END IF;
    END LOOP;
    RETURN woken;
END
$$;
