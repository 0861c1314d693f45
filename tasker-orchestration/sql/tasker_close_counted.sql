-- Counts closed steps off their tasks' open steps: `counts[i]` off task `v_tasks[i]` (distinct
-- tasks; a count of 0 only settles the task), their tallies folded in first
-- (tasker_fold_tallies: the tasks are locked in id order, so concurrent orchestrators never
-- deadlock). A running task with no open step left completes through a guarded update, so only
-- a running task completes, and its completion is recorded and announced once. Set-based (one
-- statement each, whatever the number of tasks): PostgreSQL re-reads the CHECK constraints of
-- tasks and transitions for every statement that writes them. Returns the completed tasks as
-- [{task_id, state: "complete"}], in id order.
CREATE OR REPLACE FUNCTION tasker_close_counted(v_tasks uuid[], counts int[]) RETURNS jsonb
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    completed uuid[];
BEGIN
    IF COALESCE(array_length(v_tasks, 1), 0) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    PERFORM tasker_fold_tallies('{}', v_tasks);
    UPDATE tasks t SET open_steps = t.open_steps - c.n
    FROM unnest(v_tasks, counts) AS c(task_id, n) WHERE t.id = c.task_id AND c.n <> 0;
    WITH fin AS (
        UPDATE tasks SET state = 'complete', completed_at = tasker_clock()
        WHERE id = ANY (v_tasks) AND state = 'running' AND open_steps <= 0
        RETURNING id
    ), hist AS (
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        SELECT id, 'running', 'complete', 'all steps done' FROM fin
    )
    SELECT array_agg(id ORDER BY id) INTO completed FROM fin;
    IF completed IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    -- A completed task's tallies are all folded (above) and nothing counts on them any more.
    DELETE FROM step_tallies WHERE task_id = ANY (completed);
    DELETE FROM task_tallies WHERE task_id = ANY (completed);
    RETURN tasker_completed(completed);
END
$$;
