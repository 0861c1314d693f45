-- Cancels the tasks of `v_tasks` that are running or scheduled, all in one pass, as
-- tasker_end_task(task, 'cancelled', NULL, why, v_actor) would one at a time: each task and its
-- open steps become cancelled, their transitions saying why and who asked. Set-based, so an
-- operation by filter cancels a batch of tasks in a handful of statements (tasker_operate).
--
-- Locks as the result path and tasker_end_task do: the open steps (in id order), then the task
-- rows (in id order). Returns the ids of the tasks it cancelled.
CREATE OR REPLACE FUNCTION tasker_end_tasks(v_tasks uuid[], why text, v_actor text)
RETURNS uuid[] LANGUAGE plpgsql AS $$
DECLARE
    ended uuid[];
    was text[];
BEGIN
    PERFORM 1 FROM steps
    WHERE task_id = ANY (v_tasks) AND state IN ('pending', 'enqueued', 'waiting_retry', 'throttled')
    ORDER BY id FOR UPDATE;
    SELECT COALESCE(array_agg(id ORDER BY id), '{}'), COALESCE(array_agg(state ORDER BY id), '{}')
    INTO ended, was
    FROM (SELECT id, state FROM tasks
          WHERE id = ANY (v_tasks) AND state IN ('running', 'scheduled')
          ORDER BY id FOR UPDATE) t;
    IF cardinality(ended) = 0 THEN
        RETURN ended;
    END IF;
    UPDATE tasks SET state = 'cancelled', error = NULL, completed_at = tasker_clock()
    WHERE id = ANY (ended);
    WITH old AS (
        SELECT id, state FROM steps
        WHERE task_id = ANY (ended) AND state IN ('pending', 'enqueued', 'waiting_retry', 'throttled')
        ORDER BY id FOR UPDATE
    ), upd AS (
        UPDATE steps s SET state = 'cancelled', wake_at = NULL FROM old WHERE s.id = old.id
        RETURNING s.task_id, s.id, s.attempt, old.state AS from_state
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
    SELECT task_id, id, from_state, 'cancelled', attempt, why, v_actor FROM upd;
    INSERT INTO transitions (task_id, from_state, to_state, reason, actor)
    SELECT e.id, e.was, 'cancelled', why, v_actor FROM unnest(ended, was) AS e(id, was);
    PERFORM pg_notify('tasker_task_finished', e || ':cancelled') FROM unnest(ended) AS e;
    RETURN ended;
END
$$;
