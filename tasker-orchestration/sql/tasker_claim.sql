-- Claims the limits of steps about to be dispatched (`steps.limits`: a concurrency slot,
-- tasker_claim_slot; a rate token, tasker_claim_rate), in priority then id order. Returns the steps that got everything they need
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
    slot record;
    held text;
    why jsonb;
    now_ timestamptz := tasker_clock();
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
        IF s.limits ? 'concurrency' AND held IS NULL THEN
            SELECT * INTO slot FROM tasker_claim_slot(s.limits->'concurrency', s.throttled_on, now_);
            held := slot.held;
            why := slot.why;
        END IF;
        IF why IS NULL AND s.limits ? 'rate' THEN
            why := tasker_claim_rate(s.limits->'rate', s.state, s.throttle, now_);
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
