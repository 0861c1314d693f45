-- Dispatches throttled steps whose time came (at most `batch` of each kind; rows another orchestrator holds
-- are skipped): for each key a slot was freed on, the steps waiting for it, in their order, as
-- many as it has free slots; then the steps whose reserved rate token or pause is due.
-- tasker_dispatch claims again for each (another may have taken the slot first). Returns
-- tasker_dispatch's answer with `woken`, the number of steps tried.
CREATE OR REPLACE FUNCTION tasker_wake_throttled(batch int) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    k record;
    ids uuid[] := '{}';
BEGIN
    FOR k IN
        SELECT c.key, c.lim - c.in_use AS free FROM concurrency_slots c WHERE c.wake
        ORDER BY key LIMIT batch FOR UPDATE SKIP LOCKED
    LOOP
        UPDATE concurrency_slots SET wake = false WHERE key = k.key;
        IF k.free > 0 THEN
            ids := ids || ARRAY(
                SELECT id FROM steps
                WHERE state = 'throttled' AND throttled_on = k.key
                ORDER BY throttle_order, id LIMIT k.free
                FOR UPDATE SKIP LOCKED);
        END IF;
    END LOOP;
    ids := ids || ARRAY(
        SELECT id FROM steps
        WHERE state = 'throttled' AND next_attempt_at IS NOT NULL
          AND next_attempt_at <= tasker_clock()
        ORDER BY next_attempt_at LIMIT batch
        FOR UPDATE SKIP LOCKED);
    IF cardinality(ids) = 0 THEN
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'deferred', '[]'::jsonb, 'woken', 0);
    END IF;
    RETURN tasker_dispatch(ids) || jsonb_build_object('woken', cardinality(ids));
END
$$;
