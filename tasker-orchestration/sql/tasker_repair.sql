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
    t record;
    st record;
    failed uuid[];
    problem jsonb;
    fx record;
    sk record;
    ready uuid[] := '{}';
    skip uuid[] := '{}';
    v_open int;
    finished jsonb := '[]';
    note text := why;
BEGIN
    -- The task row first: two repairs of one task run one after the other, and the second
    -- finds it running. Nothing else locks this task's steps while it is in error (no step is
    -- in flight), so taking its steps after the task cannot deadlock with the result path.
    SELECT id, state INTO t FROM tasks WHERE id = v_task FOR UPDATE;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('refused', 'task_not_found', 'message', format('no task %s', v_task));
    END IF;
    IF t.state <> 'error' THEN
        RETURN jsonb_build_object('refused', 'task_not_failed',
            'message', format('task %s is %s; only a task in error can be retried or resolved',
                              v_task, t.state));
    END IF;
    SELECT array_agg(id ORDER BY id) INTO failed FROM steps
    WHERE task_id = v_task AND state = 'failed' AND on_failure = 'fail_task';
    IF v_step IS NOT NULL OR resolution IS NOT NULL THEN
        SELECT id, name, state, step_type, branches, batch_spec, attempt INTO st
        FROM steps WHERE id = COALESCE(v_step, failed[1]) AND task_id = v_task;
        IF NOT FOUND THEN
            RETURN jsonb_build_object('refused', 'step_not_found',
                'message', format('task %s has no step %s', v_task, v_step));
        END IF;
        IF NOT (st.id = ANY (COALESCE(failed, '{}'))) THEN
            RETURN jsonb_build_object('refused', 'step_not_failed',
                'message', format('step %s is %s; only the step that failed the task can be retried or resolved',
                                  st.name, st.state));
        END IF;
        failed := ARRAY[st.id];
    END IF;
    IF resolution IS NOT NULL THEN
        problem := tasker_result_problem(st.step_type, st.branches, resolution);
        IF problem IS NOT NULL THEN
            RETURN jsonb_build_object('refused', 'invalid_result', 'message', problem->>'message');
        END IF;
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
            WHERE id = ANY (failed)
            RETURNING id, attempt
        )
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
        SELECT v_task, id, 'failed', 'waiting_retry', attempt, note, v_actor FROM upd;
        ready := COALESCE(failed, '{}');
    ELSE
        note := COALESCE('resolved: ' || why, 'resolved');
        UPDATE steps SET state = 'completed', result = resolution, processed_at = clock_timestamp()
        WHERE id = st.id;
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
        VALUES (v_task, st.id, 'failed', 'completed', st.attempt, note, v_actor);
        -- As a handler's success would: skip the branches not chosen, create the batches, then
        -- count the step off its children (those now runnable are found below).
        SELECT * INTO fx FROM tasker_step_succeeded(v_task, st.step_type, st.branches,
                                                    st.batch_spec, resolution);
        ready := fx.ready;
        PERFORM tasker_count_down_all(ARRAY[st.id], false);
    END IF;

    -- Every pending step with nothing left to wait for runs (or, if its parents were skipped,
    -- is skipped, and so on down the DAG).
    SELECT ready || COALESCE(array_agg(id) FILTER (WHERE tasker_runnable(step_type, skipped_parents, parent_count)), '{}'),
           COALESCE(array_agg(id) FILTER (WHERE NOT tasker_runnable(step_type, skipped_parents, parent_count)), '{}')
    INTO ready, skip
    FROM steps WHERE task_id = v_task AND state = 'pending' AND pending_parents = 0;
    IF array_length(skip, 1) > 0 THEN
        SELECT * INTO sk FROM tasker_skip(skip);
        ready := ready || sk.ready;
    END IF;
    SELECT array_agg(DISTINCT r) INTO ready FROM unnest(ready) AS r;

    -- Open steps counted again from the steps themselves (a repair is rare; exact beats cheap).
    SELECT count(*)::int INTO v_open FROM steps
    WHERE task_id = v_task AND state IN ('pending', 'enqueued', 'waiting_retry');
    UPDATE tasks SET state = 'running', error = NULL, completed_at = NULL, open_steps = v_open
    WHERE id = v_task;
    INSERT INTO transitions (task_id, from_state, to_state, reason, actor)
    VALUES (v_task, 'error', 'running', note, v_actor);
    IF v_open = 0 THEN
        UPDATE tasks SET state = 'complete', completed_at = clock_timestamp() WHERE id = v_task;
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        VALUES (v_task, 'running', 'complete', 'all steps done');
        PERFORM pg_notify('tasker_task_finished', v_task || ':complete');
        finished := jsonb_build_array(jsonb_build_object('task_id', v_task, 'state', 'complete'));
    END IF;
    RETURN jsonb_build_object('dispatch', tasker_dispatch(COALESCE(ready, '{}')), 'finished', finished);
END
$$;
