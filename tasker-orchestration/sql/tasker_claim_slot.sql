-- Claims a concurrency slot of limit `c` ({key, limit}) for a step (tasker_claim) that waited
-- on key `throttled_on` (or none): `held`, the key it now holds, or `why` it waits. The key's
-- row is created at its first use (the limit follows the template) and the slot is taken under
-- its lock (`UPDATE … WHERE in_use < lim`), never by counting; when other steps already wait
-- for the key, they go first, in their order.
CREATE OR REPLACE FUNCTION tasker_claim_slot(c jsonb, throttled_on text, now_ timestamptz,
                                             OUT held text, OUT why jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    k text := c->>'key';
BEGIN
    INSERT INTO concurrency_slots AS cs (key, lim) VALUES (k, (c->>'limit')::int)
    ON CONFLICT (key) DO UPDATE SET lim = EXCLUDED.lim, used_at = now_;
    IF throttled_on IS DISTINCT FROM k
       AND EXISTS (SELECT 1 FROM steps w WHERE w.state = 'throttled' AND w.throttled_on = k) THEN
        why := jsonb_build_object('kind', 'concurrency', 'key', k, 'limit', c->'limit');
        RETURN;
    END IF;
    UPDATE concurrency_slots SET in_use = in_use + 1, used_at = now_
    WHERE key = k AND in_use < lim;
    IF FOUND THEN
        held := k;
    ELSE
        why := jsonb_build_object('kind', 'concurrency', 'key', k, 'limit', c->'limit');
    END IF;
END
$$;
