-- The end of a repair of task `v_task`: every pending step with nothing left to wait for runs
-- (with `ready`, what the repair itself made runnable), or, if its parents were skipped, is
-- skipped, and so on down the DAG; the task's open steps are counted again from the steps
-- themselves (a repair is rare: exact beats cheap) and it is running again, or complete if
-- nothing is left to run. Returns {dispatch: tasker_dispatch(…), finished: [{task_id, state}]}.
CREATE OR REPLACE FUNCTION tasker_repair_resume(v_task uuid, ready uuid[], v_actor text, note text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    skip uuid[];
    sk record;
    v_open int;
    finished jsonb := '[]';
BEGIN
    -- Counts on tallies (a large fan-out's) are folded in first.
    PERFORM tasker_fold_tallies(ARRAY(SELECT DISTINCT step_id FROM step_tallies
                                      WHERE task_id = v_task), ARRAY[v_task]);
    SELECT ready || COALESCE(array_agg(id) FILTER (WHERE tasker_runnable(step_type, skipped_parents, parent_count)), '{}'),
           COALESCE(array_agg(id) FILTER (WHERE NOT tasker_runnable(step_type, skipped_parents, parent_count)), '{}')
    INTO ready, skip
    FROM steps WHERE task_id = v_task AND state = 'pending' AND pending_parents = 0;
    IF array_length(skip, 1) > 0 THEN
        SELECT * INTO sk FROM tasker_skip(skip);
        ready := ready || sk.ready;
    END IF;
    SELECT array_agg(DISTINCT r) INTO ready FROM unnest(ready) AS r;

    SELECT count(*)::int INTO v_open FROM steps
    WHERE task_id = v_task AND state IN ('pending', 'enqueued', 'waiting_retry', 'throttled');
    UPDATE tasks SET state = 'running', error = NULL, completed_at = NULL, open_steps = v_open
    WHERE id = v_task;
    INSERT INTO transitions (task_id, from_state, to_state, reason, actor)
    VALUES (v_task, 'error', 'running', note, v_actor);
    IF v_open = 0 THEN
        UPDATE tasks SET state = 'complete', completed_at = tasker_clock() WHERE id = v_task;
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        VALUES (v_task, 'running', 'complete', 'all steps done');
        PERFORM pg_notify('tasker_task_finished', v_task || ':complete');
        finished := jsonb_build_array(jsonb_build_object('task_id', v_task, 'state', 'complete'));
    END IF;
    RETURN jsonb_build_object('dispatch', tasker_dispatch(COALESCE(ready, '{}')), 'finished', finished);
END
$$;
