-- Starts the waits of wait steps just dispatched (their "publication": the orchestrator holds
-- them instead of a worker). Each step in flight at the attempt given gets its `wake_at`: the
-- end of its sleep (counted from when it became ready, so a restart sleeps only what is left),
-- the time it sleeps until, or its signal's (or event's) timeout — or now, when the signal it
-- waits for arrived before it began (an event: tasker_event_wait_begin), or its `until` cannot
-- be read (the wake then fails it). A step
-- whose wait began already is left alone (a re-publication after a crash).
--
-- Steps are locked in id order, as everywhere else; tasker_signal locks them before storing a
-- signal, so a signal and the start of its wait never miss each other.
-- Returns [{step_id, delay_ms}]: when to look again.
CREATE OR REPLACE FUNCTION tasker_begin_waits(ids uuid[], attempts int[])
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    w record;
    wake timestamptz;
    now_ timestamptz := tasker_clock();
    out jsonb := '[]';
BEGIN
    FOR w IN
        SELECT s.id, s.task_id, s.wait, s.dispatched_at
        FROM unnest(ids, attempts) AS x(id, attempt)
        JOIN steps s ON s.id = x.id AND s.attempt = x.attempt
        WHERE tasker_sent(s) AND s.step_type = 'wait'
        ORDER BY s.id FOR UPDATE OF s
    LOOP
        CASE w.wait->>'kind'
            WHEN 'sleep' THEN
                wake := w.dispatched_at + make_interval(secs => (w.wait->>'ms')::float8 / 1000);
            WHEN 'until' THEN
                SELECT tasker_wait_until(t.context,
                                         ARRAY(SELECT jsonb_array_elements_text(w.wait->'path')))
                INTO wake FROM tasks t WHERE t.id = w.task_id;
                -- Unreadable, or beyond a year: woken now, and the wake fails it.
                IF wake IS NULL OR wake > now_ + interval '365 days' THEN
                    wake := now_;
                END IF;
            WHEN 'event' THEN
                wake := tasker_event_wait_begin(w.id, w.task_id, w.wait, w.dispatched_at);
            ELSE
                IF EXISTS (SELECT FROM signals
                           WHERE task_id = w.task_id AND name = w.wait->>'signal'
                             AND consumed_by IS NULL) THEN
                    wake := now_;
                ELSE
                    wake := w.dispatched_at
                            + make_interval(secs => (w.wait->>'timeout_ms')::float8 / 1000);
                END IF;
        END CASE;
        UPDATE steps SET wake_at = wake, publish_count = publish_count + 1 WHERE id = w.id;
        out := out || jsonb_build_object(
            'step_id', w.id,
            'delay_ms', GREATEST(0, ceil(extract(epoch FROM wake - now_) * 1000))::bigint);
    END LOOP;
    RETURN out;
END
$$;
