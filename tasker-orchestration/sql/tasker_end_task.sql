-- Ends a running task (error or cancel), or cancels a scheduled one: the task and every open
-- step become terminal, their transitions saying `why` and, if given, who asked (`v_actor`).
-- Returns false if the task was neither.
--
-- Locks are taken in the order the result path takes them — the task's steps (in id order),
-- then the task row — so a cancel racing a result batch waits instead of deadlocking.
CREATE OR REPLACE FUNCTION tasker_end_task(v_task uuid, to_state text, err jsonb, why text,
                                           v_actor text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    was text;
BEGIN
    PERFORM 1 FROM steps
    WHERE task_id = v_task AND state IN ('pending', 'enqueued', 'waiting_retry', 'throttled')
    ORDER BY id FOR UPDATE;
    SELECT state INTO was FROM tasks WHERE id = v_task FOR UPDATE;
    IF was IS NULL OR was NOT IN ('running', 'scheduled')
       OR (was = 'scheduled' AND to_state <> 'cancelled') THEN
        RETURN false;
    END IF;
    UPDATE tasks SET state = to_state, error = err, completed_at = tasker_clock()
    WHERE id = v_task;
    WITH old AS (
        SELECT id, state FROM steps
        WHERE task_id = v_task AND state IN ('pending', 'enqueued', 'waiting_retry', 'throttled')
        ORDER BY id FOR UPDATE
    ), upd AS (
        UPDATE steps s SET state = 'cancelled', wake_at = NULL FROM old WHERE s.id = old.id
        RETURNING s.id, s.attempt, old.state AS from_state
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
    SELECT v_task, id, from_state, 'cancelled', attempt, why, v_actor FROM upd;
    INSERT INTO transitions (task_id, from_state, to_state, reason, actor)
    VALUES (v_task, was, to_state, why, v_actor);
    PERFORM pg_notify('tasker_task_finished', v_task || ':' || to_state);
    RETURN true;
END
$$;

-- The same, asked by no one in particular (the engine's own ends: a failure, a parent's end).
CREATE OR REPLACE FUNCTION tasker_end_task(v_task uuid, to_state text, err jsonb, why text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT tasker_end_task(v_task, to_state, err, why, NULL)
$$;
