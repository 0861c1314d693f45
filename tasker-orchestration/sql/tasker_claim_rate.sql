-- Claims a token of rate limit `r` ({key, limit, per_ms, burst}) for a step (tasker_claim) in
-- `state`, throttled by `throttle` (or not): NULL when it may start now, else why it waits. A
-- step whose token was reserved for its time waits only for that time, or for a pause since;
-- any other reserves the next token (GCRA: a token every per_ms / limit, `burst` at once) and
-- waits `until` it, or for its key's pause to end.
CREATE OR REPLACE FUNCTION tasker_claim_rate(r jsonb, state text, throttle jsonb,
                                             now_ timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    rl record;
    paused timestamptz;
    emission interval;
    base timestamptz;
    allowed timestamptz;
BEGIN
    IF state = 'throttled' AND throttle->>'kind' = 'rate' THEN
        SELECT paused_until INTO paused FROM rate_limits WHERE key = r->>'key';
        IF paused > now_ THEN
            RETURN jsonb_build_object('kind', 'paused', 'key', r->>'key', 'limit', r->'limit',
                                      'until', paused);
        ELSIF (throttle->>'until')::timestamptz > now_ THEN
            RETURN throttle - 'since';
        END IF;
        RETURN NULL;
    END IF;
    INSERT INTO rate_limits AS x (key, lim, per_ms, burst, tat)
    VALUES (r->>'key', (r->>'limit')::int, (r->>'per_ms')::bigint, (r->>'burst')::int, now_)
    ON CONFLICT (key) DO UPDATE
        SET lim = EXCLUDED.lim, per_ms = EXCLUDED.per_ms, burst = EXCLUDED.burst, used_at = now_
    RETURNING * INTO rl;
    IF rl.paused_until > now_ THEN
        RETURN jsonb_build_object('kind', 'paused', 'key', rl.key, 'limit', rl.lim,
                                  'until', rl.paused_until);
    END IF;
    emission := make_interval(secs => rl.per_ms::float8 / rl.lim / 1000);
    base := greatest(rl.tat, now_);
    allowed := base - emission * (rl.burst - 1);
    UPDATE rate_limits SET tat = base + emission WHERE key = rl.key;
    IF allowed > now_ THEN
        RETURN jsonb_build_object('kind', 'rate', 'key', rl.key, 'limit', rl.lim,
                                  'until', allowed);
    END IF;
    RETURN NULL;
END
$$;
