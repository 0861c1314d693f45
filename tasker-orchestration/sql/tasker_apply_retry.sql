-- A retryable failure with attempts left (counted from the step's last repair, attempt_base):
-- the step waits for its retry. The handler's own delay (a rate limit's Retry-After, at most a
-- day) wins over the step's backoff. Returns the step in `ready` when it may run again at once,
-- else its retry ({step_id, delay_ms}) for a timer.
--
-- The step (`st`) is locked and in flight with the attempt `r` reports.
CREATE OR REPLACE FUNCTION tasker_apply_retry(st steps, r jsonb, OUT ready uuid[], OUT retry jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    outcome jsonb := r->'outcome';
    err jsonb := r->'outcome'->'error';
    delay bigint;
BEGIN
    -- (LEAST ignores NULL, so the handler's value is tested first.)
    delay := CASE WHEN outcome->>'retry_after_ms' IS NOT NULL
                  THEN LEAST((outcome->>'retry_after_ms')::numeric, 86400000)::bigint
                  ELSE tasker_retry_delay_ms(st.backoff, st.base_ms, st.max_ms,
                                             st.attempt - st.attempt_base) END;
    UPDATE steps SET state = 'waiting_retry', error = err,
                     started_at = (r->>'started_at')::timestamptz,
                     finished_at = (r->>'finished_at')::timestamptz,
                     worker = r->>'worker', processed_at = tasker_clock(),
                     next_attempt_at = tasker_clock() + delay * interval '1 millisecond'
    WHERE id = st.id;
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    VALUES (st.task_id, st.id, 'enqueued', 'waiting_retry', st.attempt,
            format('%s: %s', err->>'kind', err->>'message'));
    ready := CASE WHEN delay = 0 THEN ARRAY[st.id] ELSE '{}' END;
    retry := CASE WHEN delay = 0 THEN NULL
                  ELSE jsonb_build_object('step_id', st.id, 'delay_ms', delay) END;
END
$$;
