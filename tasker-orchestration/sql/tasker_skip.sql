-- Skips the queued pending steps and propagates to children that can no longer run.
-- Returns the children that became runnable and, per skipped step, its task (to close it).
CREATE OR REPLACE FUNCTION tasker_skip(queue uuid[], OUT ready uuid[], OUT closed uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_task uuid;
    cd record;
BEGIN
    ready := '{}';
    closed := '{}';
    WHILE COALESCE(array_length(queue, 1), 0) > 0 LOOP
        v_id := queue[1];
        queue := queue[2:];
        UPDATE steps SET state = 'skipped', processed_at = tasker_clock()
        WHERE id = v_id AND state = 'pending'
        RETURNING task_id INTO v_task;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        VALUES (v_task, v_id, 'pending', 'skipped', 0, 'branch not chosen');
        closed := closed || v_task;
        SELECT * INTO cd FROM tasker_count_down_all(ARRAY[v_id], true);
        ready := ready || cd.ready;
        queue := queue || cd.skip;
    END LOOP;
END
$$;
