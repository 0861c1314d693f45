-- Which steps a repair of task `v_task` acts on, or why it is refused (having changed nothing):
-- task_not_found, task_not_failed, step_not_found, step_not_failed, invalid_result. `v_step`,
-- if given, must be the step that failed the task (a task in error has exactly one: the first
-- failure ends the task and cancels every step still in flight); `resolution`, if given, must be
-- a result that step's type can use. Locks the task row: two repairs of one task run one after
-- the other, and the second finds it running.
CREATE OR REPLACE FUNCTION tasker_repair_target(v_task uuid, v_step uuid, resolution jsonb,
                                                OUT failed uuid[], OUT refused jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    t record;
    st record;
    problem jsonb;
BEGIN
    SELECT id, state INTO t FROM tasks WHERE id = v_task FOR UPDATE;
    IF NOT FOUND THEN
        refused := jsonb_build_object('refused', 'task_not_found', 'message', format('no task %s', v_task));
        RETURN;
    END IF;
    IF t.state <> 'error' THEN
        refused := jsonb_build_object('refused', 'task_not_failed',
            'message', format('task %s is %s; only a task in error can be retried or resolved',
                              v_task, t.state));
        RETURN;
    END IF;
    SELECT array_agg(id ORDER BY id) INTO failed FROM steps
    WHERE task_id = v_task AND state = 'failed' AND on_failure = 'fail_task';
    IF v_step IS NULL AND resolution IS NULL THEN
        RETURN;
    END IF;
    SELECT id, name, state, step_type, branches INTO st
    FROM steps WHERE id = COALESCE(v_step, failed[1]) AND task_id = v_task;
    IF NOT FOUND THEN
        refused := jsonb_build_object('refused', 'step_not_found',
            'message', format('task %s has no step %s', v_task, v_step));
    ELSIF NOT (st.id = ANY (COALESCE(failed, '{}'))) THEN
        refused := jsonb_build_object('refused', 'step_not_failed',
            'message', format('step %s is %s; only the step that failed the task can be retried or resolved',
                              st.name, st.state));
    ELSE
        failed := ARRAY[st.id];
        problem := CASE WHEN resolution IS NOT NULL
                        THEN tasker_result_problem(st.step_type, st.branches, resolution) END;
        IF problem IS NOT NULL THEN
            refused := jsonb_build_object('refused', 'invalid_result', 'message', problem->>'message');
        END IF;
    END IF;
END
$$;
