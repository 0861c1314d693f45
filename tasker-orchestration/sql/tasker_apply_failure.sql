-- A permanent failure, or a retryable one with no attempt left: the step fails for good. A
-- failed batch under `on_failure: continue` is recorded and counted off like a completed one
-- (its children go on, seeing {"failed": true, "error": …} in its place); any other failure ends
-- its task in error, cancelling its open steps. Returns, for `continue`, the children now
-- runnable and those that can no longer run (to skip), and the step's task to close; else the
-- task that ended, as [{task_id, state}].
--
-- The step (`st`) is locked and in flight with the attempt `r` reports.
CREATE OR REPLACE FUNCTION tasker_apply_failure(st steps, r jsonb, OUT ready uuid[],
                                                OUT skip uuid[], OUT closed uuid[],
                                                OUT finished jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    err jsonb := r->'outcome'->'error';
    why text;
    cd record;
BEGIN
    ready := '{}';
    skip := '{}';
    closed := '{}';
    finished := '[]';
    why := CASE WHEN (r->'outcome'->>'retryable')::boolean
                THEN format('attempts exhausted (%s): %s', st.attempt, err->>'message')
                ELSE format('permanent failure: %s', err->>'message') END;
    UPDATE steps SET state = 'failed', error = err,
                     started_at = (r->>'started_at')::timestamptz,
                     finished_at = (r->>'finished_at')::timestamptz,
                     worker = r->>'worker', processed_at = tasker_clock()
    WHERE id = st.id;
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    VALUES (st.task_id, st.id, 'enqueued', 'failed', st.attempt, why);
    IF st.on_failure = 'continue' THEN
        SELECT * INTO cd FROM tasker_count_down_all(ARRAY[st.id], false);
        ready := cd.ready;
        skip := cd.skip;
        closed := ARRAY[st.task_id];
    ELSIF tasker_end_task(st.task_id, 'error',
                          jsonb_build_object('step', st.name, 'attempt', st.attempt, 'error', err),
                          why) THEN
        finished := jsonb_build_array(jsonb_build_object('task_id', st.task_id, 'state', 'error'));
    END IF;
END
$$;
