-- Counts closed steps off their tasks' open steps: one entry in `closed` per step that closed
-- (task ids, repeated). Tasks are locked in id order, so concurrent orchestrators never
-- deadlock; a task whose last open step closed completes through a guarded update, so only a
-- running task completes, and its completion is recorded and announced once. Set-based (one
-- statement each, whatever the number of tasks): PostgreSQL re-reads the CHECK constraints of
-- tasks and transitions for every statement that writes them. Returns the completed tasks as
-- [{task_id, state: "complete"}], in id order.
CREATE OR REPLACE FUNCTION tasker_close_steps(closed uuid[]) RETURNS jsonb LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    emptied uuid[];
    completed uuid[];
BEGIN
    IF COALESCE(array_length(closed, 1), 0) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    WITH c AS (
        SELECT x.task_id, count(*)::int AS n FROM unnest(closed) AS x(task_id) GROUP BY x.task_id
    ), locked AS (
        SELECT t.id, c.n FROM tasks t JOIN c ON c.task_id = t.id ORDER BY t.id FOR UPDATE OF t
    ), counted AS (
        UPDATE tasks t SET open_steps = t.open_steps - locked.n
        FROM locked WHERE t.id = locked.id
        RETURNING t.id, t.open_steps
    )
    SELECT array_agg(id) INTO emptied FROM counted WHERE open_steps <= 0;
    IF emptied IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    WITH fin AS (
        UPDATE tasks SET state = 'complete', completed_at = tasker_clock()
        WHERE id = ANY(emptied) AND state = 'running'
        RETURNING id
    ), hist AS (
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        SELECT id, 'running', 'complete', 'all steps done' FROM fin
    )
    SELECT array_agg(id ORDER BY id) INTO completed FROM fin;
    IF completed IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    PERFORM pg_notify('tasker_task_finished', c || ':complete')
    FROM unnest(completed) WITH ORDINALITY AS x(c, i) ORDER BY i;
    RETURN (SELECT jsonb_agg(jsonb_build_object('task_id', c, 'state', 'complete') ORDER BY i)
            FROM unnest(completed) WITH ORDINALITY AS x(c, i));
END
$$;
