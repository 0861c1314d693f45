-- What a `signal` (or `event`: its event arrives as a signal) wait of step `step` (task `task`), begun at `began`, comes to at `now_`
-- (tasker_wake): the oldest unconsumed signal of its name is consumed by this step (one signal,
-- one step) and {"outcome": success with its payload}; none, and its timeout passed:
-- `on_timeout` — continue ({"outcome": success {"timed_out": true}}), skip ({"skip": true}) or
-- fail (a permanent failure `wait_timed_out`); none yet (another step took the signal that woke
-- it): {"rearm": its timeout}.
CREATE OR REPLACE FUNCTION tasker_signal_outcome(step uuid, task uuid, wait jsonb,
                                                 began timestamptz, now_ timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
    timeout interval := make_interval(secs => (wait->>'timeout_ms')::float8 / 1000);
BEGIN
    WITH first AS (
        SELECT task_id, signal_id FROM signals
        WHERE task_id = task AND name = wait->>'signal' AND consumed_by IS NULL
        ORDER BY received_at, signal_id LIMIT 1 FOR UPDATE SKIP LOCKED
    )
    UPDATE signals g SET consumed_by = step, consumed_at = now_
    FROM first WHERE g.task_id = first.task_id AND g.signal_id = first.signal_id
    RETURNING g.payload INTO payload;
    IF FOUND THEN
        RETURN jsonb_build_object('outcome',
                                  jsonb_build_object('status', 'success', 'result', payload));
    ELSIF now_ < began + timeout THEN
        RETURN jsonb_build_object('rearm', began + timeout);
    END IF;
    RETURN CASE wait->>'on_timeout'
        WHEN 'continue' THEN jsonb_build_object('outcome', jsonb_build_object(
            'status', 'success', 'result', jsonb_build_object('timed_out', true)))
        WHEN 'skip' THEN jsonb_build_object('skip', true)
        ELSE jsonb_build_object('outcome', jsonb_build_object(
            'status', 'failure', 'retryable', false,
            'error', jsonb_build_object('kind', 'wait_timed_out', 'message',
                CASE WHEN wait->>'kind' = 'event'
                     THEN format('no event `%s` matching it arrived within %s', wait->>'event',
                                 timeout)
                     ELSE format('no signal `%s` arrived within %s', wait->>'signal', timeout)
                END)))
    END;
END
$$;
