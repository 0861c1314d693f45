-- Repairs a task that ended in error, by hand. Without `resolution` the step that failed it runs
-- again; with one, that step is completed with `resolution` as its result and the DAG goes on
-- from there. Either way the steps the failure cancelled are pending again, the task is running
-- again (or complete, if nothing is left to run), and the history records who and why.
--
-- `v_step`, if given, must be the step that failed the task (a task in error has exactly one:
-- the first failure ends the task and cancels every step still in flight). A retried step gets
-- its template's attempts again, counted from its last attempt (attempt_base), so attempt
-- numbers never repeat and a stale result of an attempt before the repair is still ignored.
--
-- Returns {dispatch: tasker_dispatch(…), finished: [{task_id, state}]}, or {refused: code,
-- message} having changed nothing: task_not_found, task_not_failed, step_not_found,
-- step_not_failed, invalid_result.
CREATE OR REPLACE FUNCTION tasker_repair(v_task uuid, v_step uuid, resolution jsonb, v_actor text,
                                         why text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    target record;
    st record;
    fx record;
    ready uuid[] := '{}';
    note text;
BEGIN
    -- The task row first (tasker_repair_target locks it): nothing else locks this task's steps
    -- while it is in error (no step is in flight), so taking its steps after the task cannot
    -- deadlock with the result path.
    SELECT * INTO target FROM tasker_repair_target(v_task, v_step, resolution);
    IF target.refused IS NOT NULL THEN
        RETURN target.refused;
    END IF;

    -- The steps the failure cancelled wait for their parents again, with fresh attempts.
    WITH upd AS (
        UPDATE steps SET state = 'pending', attempt_base = attempt, next_attempt_at = NULL
        WHERE task_id = v_task AND state = 'cancelled'
        RETURNING id, attempt
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
    SELECT v_task, id, 'cancelled', 'pending', attempt, 'task repaired', v_actor FROM upd;

    IF resolution IS NULL THEN
        note := COALESCE('retried: ' || why, 'retried');
        WITH upd AS (
            UPDATE steps SET state = 'waiting_retry', attempt_base = attempt, next_attempt_at = NULL
            WHERE id = ANY (target.failed)
            RETURNING id, attempt
        )
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
        SELECT v_task, id, 'failed', 'waiting_retry', attempt, note, v_actor FROM upd;
        ready := COALESCE(target.failed, '{}');
    ELSE
        note := COALESCE('resolved: ' || why, 'resolved');
        UPDATE steps SET state = 'completed', result = resolution, processed_at = tasker_clock()
        WHERE id = target.failed[1]
        RETURNING id, step_type, branches, batch_spec, attempt INTO st;
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
        VALUES (v_task, st.id, 'failed', 'completed', st.attempt, note, v_actor);
        -- As a handler's success would: skip the branches not chosen, create the batches, then
        -- count the step off its children (those now runnable are found when resuming).
        SELECT * INTO fx FROM tasker_step_succeeded(v_task, st.step_type, st.branches,
                                                    st.batch_spec, resolution);
        ready := fx.ready;
        PERFORM tasker_count_down_all(ARRAY[st.id], false);
    END IF;
    RETURN tasker_repair_resume(v_task, ready, v_actor, note);
END
$$;
