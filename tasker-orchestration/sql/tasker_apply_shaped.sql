-- The success of a decision or a batchable step, whose result shapes the rest of its DAG: a
-- result it cannot use (a decision naming no declared branch, a batchable step listing no
-- batches) fails the step for good (tasker_apply_failure); otherwise a decision skips the branches
-- it did not choose and a batchable step creates its batches (tasker_step_succeeded; workers
-- without limits enqueued at once, tasker_insert_batch_workers), before the
-- step succeeds as a plain one does (tasker_succeed_steps): counted off its children (which wait
-- for the batches) and its task. Returns what tasker_apply_failure does, plus `enqueued` (steps
-- enqueued already).
--
-- The step (`st`) is locked and in flight with the attempt `r` reports.
CREATE OR REPLACE FUNCTION tasker_apply_shaped(st steps, r jsonb, OUT enqueued uuid[],
                                               OUT ready uuid[], OUT skip uuid[],
                                               OUT closed uuid[], OUT finished jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    problem jsonb := tasker_result_problem(st.step_type, st.branches, r->'outcome'->'result');
    fx record;
    ok record;
    workers uuid[] := '{}';
BEGIN
    enqueued := '{}';
    IF problem IS NOT NULL THEN
        SELECT * INTO fx FROM tasker_apply_failure(st, jsonb_set(r, '{outcome}',
            jsonb_build_object('status', 'failure', 'retryable', false, 'error', problem)));
        ready := fx.ready;
        skip := fx.skip;
        closed := fx.closed;
        finished := fx.finished;
        RETURN;
    END IF;
    IF st.step_type = 'batchable' AND NULLIF(st.batch_spec->'limits', 'null') IS NULL THEN
        -- Batch workers without limits are written enqueued already: nothing to dispatch.
        workers := tasker_insert_batch_workers(st.task_id, st.batch_spec,
                                               r->'outcome'->'result'->'batches', true);
        SELECT '{}'::uuid[] AS ready, '{}'::uuid[] AS closed INTO fx;
    ELSE
        SELECT * INTO fx FROM tasker_step_succeeded(st.task_id, st.step_type, st.branches,
                                                    st.batch_spec, r->'outcome'->'result');
    END IF;
    SELECT * INTO ok FROM tasker_succeed_steps(ARRAY[st.id], ARRAY[st.task_id],
                                               ARRAY[st.attempt], ARRAY[r]);
    enqueued := workers || ok.enqueued;
    ready := fx.ready || ok.limited;
    skip := ok.skip;
    closed := fx.closed;
    finished := ok.finished;
END
$$;
