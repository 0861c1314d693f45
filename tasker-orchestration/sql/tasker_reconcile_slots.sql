-- The reconciler: recounts the slots of every concurrency key in use (or held by some step)
-- from the steps that hold them, each key under its row's lock, so a claim or a release in
-- progress is waited for, never raced. Corrects any difference and returns
-- [{key, counted, recorded}] for each key that was wrong (normally none); a key given slots
-- back is marked to wake the steps waiting for it. A step out of flight that still names a
-- slot (which the release trigger makes impossible) is cleared and counted as drift too. And a
-- key with a free slot and steps waiting for it is marked to wake them, whatever left them
-- there (a wake pass that found them locked by another transaction).
CREATE OR REPLACE FUNCTION tasker_reconcile_slots() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    k record;
    counted int;
    recorded int;
    drift jsonb := '[]';
BEGIN
    FOR k IN
        SELECT key FROM concurrency_slots WHERE in_use > 0
        UNION
        SELECT DISTINCT slot FROM steps WHERE slot IS NOT NULL
        ORDER BY 1
    LOOP
        SELECT in_use INTO recorded FROM concurrency_slots WHERE key = k.key FOR UPDATE;
        UPDATE steps SET slot = NULL
        WHERE slot = k.key AND state NOT IN ('enqueued', 'throttled');
        SELECT count(*)::int INTO counted FROM steps WHERE slot = k.key;
        IF recorded IS DISTINCT FROM counted THEN
            UPDATE concurrency_slots
            SET in_use = counted, wake = wake OR counted < in_use
            WHERE key = k.key;
            drift := drift || jsonb_build_object('key', k.key, 'counted', counted,
                                                 'recorded', recorded);
        END IF;
    END LOOP;
    UPDATE concurrency_slots c SET wake = true
    FROM (SELECT DISTINCT throttled_on AS key FROM steps
          WHERE state = 'throttled' AND throttled_on IS NOT NULL) w
    WHERE c.key = w.key AND NOT c.wake AND c.in_use < c.lim;
    RETURN drift;
END
$$;
