-- What an `until` wait of task `task`, begun at `began`, comes to at `now_` (tasker_wake):
-- {"outcome": success {"woke_at"}} once the time in its context (at `wait.path`) has come,
-- {"rearm": that time} when woken early (its begin could not read the time), or a permanent
-- failure `wait_until_invalid` when the time is unreadable or more than a year ahead.
CREATE OR REPLACE FUNCTION tasker_until_outcome(task uuid, wait jsonb, began timestamptz,
                                                now_ timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    until_at timestamptz;
BEGIN
    SELECT tasker_wait_until(t.context, ARRAY(SELECT jsonb_array_elements_text(wait->'path')))
    INTO until_at FROM tasks t WHERE t.id = task;
    IF until_at IS NULL OR until_at > began + interval '365 days' THEN
        RETURN jsonb_build_object('outcome', jsonb_build_object(
            'status', 'failure', 'retryable', false,
            'error', jsonb_build_object('kind', 'wait_until_invalid', 'message',
                format('the context at %s must be an RFC 3339 time with an offset, '
                       'at most a year ahead', wait->>'pointer'))));
    ELSIF until_at > now_ THEN
        RETURN jsonb_build_object('rearm', until_at);
    END IF;
    RETURN jsonb_build_object('outcome', jsonb_build_object(
        'status', 'success', 'result', jsonb_build_object('woke_at', now_)));
END
$$;
