-- Claims the limits of steps about to be dispatched (`steps.limits`: a concurrency slot, a rate
-- token), in priority then id order. Returns the steps that got everything they need
-- (`granted`, to enqueue now; a granted step holds its slot in `slot`) and leaves the others
-- `throttled`, saying what holds them (`throttle`):
--   concurrency — no free slot, or other steps already wait for one (they go first): it waits
--     in its key's queue (`throttled_on`, `throttle_order`: the time it began to wait, plus
--     `tasker.priority_aging_ms` per priority level below high) until a slot frees;
--   rate — its token is reserved for `until` (GCRA: a token every per_ms / limit, `burst` at
--     once), when the orchestrator's timer dispatches it (`next_attempt_at`);
--   paused — its rate key is paused until `until`; it claims again then.
-- A slot is claimed under its key row's lock (`UPDATE … WHERE in_use < lim`), never by counting;
-- a step that has its slot but waits for its rate token keeps the slot. `throttled` lists the
-- timed waits, [{step_id, delay_ms}], for the caller's timers; `waited`, for each granted step
-- that had been throttled, [{kind, seconds}].
CREATE OR REPLACE FUNCTION tasker_claim(ids uuid[], OUT granted uuid[], OUT throttled jsonb,
                                        OUT waited jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    rl record;
    c jsonb;
    r jsonb;
    k text;
    held text;
    why jsonb;
    paused timestamptz;
    emission interval;
    base timestamptz;
    allowed timestamptz;
    now_ timestamptz := clock_timestamp();
    aging interval := make_interval(secs => COALESCE(
        NULLIF(current_setting('tasker.priority_aging_ms', true), '')::float8, 10000) / 1000);
BEGIN
    granted := '{}';
    throttled := '[]';
    waited := '[]';
    FOR s IN
        SELECT st.id, st.task_id, st.state, st.attempt, st.limits, st.slot, st.throttle,
               st.throttled_on, st.throttle_order, t.priority
        FROM unnest(ids) AS i(id)
        CROSS JOIN LATERAL (SELECT * FROM steps WHERE id = i.id OFFSET 0) st
        JOIN tasks t ON t.id = st.task_id
        WHERE st.state IN ('pending', 'waiting_retry', 'throttled') AND st.limits IS NOT NULL
        ORDER BY t.priority, st.id
        FOR UPDATE OF st
    LOOP
        why := NULL;
        held := s.slot;
        c := s.limits->'concurrency';
        r := s.limits->'rate';
        IF c IS NOT NULL AND held IS NULL THEN
            k := c->>'key';
            -- The key's row, locked (created at its first use; the limit follows the template).
            INSERT INTO concurrency_slots AS cs (key, lim) VALUES (k, (c->>'limit')::int)
            ON CONFLICT (key) DO UPDATE SET lim = EXCLUDED.lim, used_at = now_;
            IF s.throttled_on IS DISTINCT FROM k
               AND EXISTS (SELECT 1 FROM steps w
                           WHERE w.state = 'throttled' AND w.throttled_on = k) THEN
                -- Others wait for this key already: they go first, in their order.
                why := jsonb_build_object('kind', 'concurrency', 'key', k, 'limit', c->'limit');
            ELSE
                UPDATE concurrency_slots SET in_use = in_use + 1, used_at = now_
                WHERE key = k AND in_use < lim;
                IF FOUND THEN
                    held := k;
                ELSE
                    why := jsonb_build_object('kind', 'concurrency', 'key', k,
                                              'limit', c->'limit');
                END IF;
            END IF;
        END IF;
        IF why IS NULL AND r IS NOT NULL THEN
            IF s.state = 'throttled' AND s.throttle->>'kind' = 'rate' THEN
                -- Its token was reserved for its time: only a pause since holds it back.
                SELECT paused_until INTO paused FROM rate_limits WHERE key = r->>'key';
                IF paused > now_ THEN
                    why := jsonb_build_object('kind', 'paused', 'key', r->>'key',
                                              'limit', r->'limit', 'until', paused);
                ELSIF (s.throttle->>'until')::timestamptz > now_ THEN
                    why := s.throttle - 'since';
                END IF;
            ELSE
                INSERT INTO rate_limits AS x (key, lim, per_ms, burst, tat)
                VALUES (r->>'key', (r->>'limit')::int, (r->>'per_ms')::bigint,
                        (r->>'burst')::int, now_)
                ON CONFLICT (key) DO UPDATE
                    SET lim = EXCLUDED.lim, per_ms = EXCLUDED.per_ms, burst = EXCLUDED.burst,
                        used_at = now_
                RETURNING * INTO rl;
                IF rl.paused_until > now_ THEN
                    why := jsonb_build_object('kind', 'paused', 'key', rl.key, 'limit', rl.lim,
                                              'until', rl.paused_until);
                ELSE
                    emission := make_interval(secs => rl.per_ms::float8 / rl.lim / 1000);
                    base := greatest(rl.tat, now_);
                    allowed := base - emission * (rl.burst - 1);
                    UPDATE rate_limits SET tat = base + emission WHERE key = rl.key;
                    IF allowed > now_ THEN
                        why := jsonb_build_object('kind', 'rate', 'key', rl.key, 'limit', rl.lim,
                                                  'until', allowed);
                    END IF;
                END IF;
            END IF;
        END IF;

        IF why IS NULL THEN
            granted := granted || s.id;
            IF s.state = 'throttled' THEN
                waited := waited || jsonb_build_object(
                    'kind', s.throttle->>'kind',
                    'seconds', EXTRACT(EPOCH FROM now_ - (s.throttle->>'since')::timestamptz));
            END IF;
            UPDATE steps SET slot = held, throttle = NULL, throttled_on = NULL,
                             throttle_order = NULL
            WHERE id = s.id;
        ELSE
            why := why || jsonb_build_object('since', COALESCE(s.throttle->'since', to_jsonb(now_)));
            UPDATE steps
            SET state = 'throttled', slot = held, throttle = why,
                throttled_on = CASE WHEN why->>'kind' = 'concurrency' THEN why->>'key' END,
                throttle_order = CASE
                    WHEN why->>'kind' <> 'concurrency' THEN NULL
                    WHEN s.throttled_on = why->>'key' THEN s.throttle_order
                    ELSE now_ + aging * s.priority END,
                next_attempt_at = (why->>'until')::timestamptz
            WHERE id = s.id;
            IF s.state <> 'throttled' THEN
                INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
                VALUES (s.task_id, s.id, s.state, 'throttled', s.attempt,
                        CASE why->>'kind'
                            WHEN 'concurrency' THEN format('concurrency limit %s (%s)',
                                                          why->>'key', why->>'limit')
                            WHEN 'rate' THEN format('rate limit %s: starts at %s',
                                                   why->>'key', why->>'until')
                            ELSE format('rate limit %s paused until %s', why->>'key',
                                        why->>'until') END);
            END IF;
            IF why ? 'until' THEN
                throttled := throttled || jsonb_build_object(
                    'step_id', s.id,
                    'delay_ms', greatest(0, ceil(EXTRACT(EPOCH FROM
                        (why->>'until')::timestamptz - now_) * 1000))::bigint);
            END IF;
        END IF;
    END LOOP;
END
$$;
