-- Counts closed steps off their tasks' open steps: one entry in `closed` per step that closed
-- (task ids, repeated), counted per task by tasker_close_counted. Returns the completed tasks
-- as [{task_id, state: "complete"}], in id order.
CREATE OR REPLACE FUNCTION tasker_close_steps(closed uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_tasks uuid[];
    counts int[];
BEGIN
    IF COALESCE(array_length(closed, 1), 0) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    SELECT array_agg(task_id ORDER BY task_id), array_agg(n ORDER BY task_id)
    INTO v_tasks, counts
    FROM (SELECT x.task_id, count(*)::int AS n FROM unnest(closed) AS x(task_id)
          GROUP BY x.task_id) c;
    RETURN tasker_close_counted(v_tasks, counts);
END
$$;
