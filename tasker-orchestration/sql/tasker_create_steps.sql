-- The steps, edges and first transitions of the tasks of `batch` this tasker_create_tasks call
-- created (all of them when `everything`; else those a look-up by primary key finds), in one
-- statement. A root step (no parents) of a task that starts now is stored `enqueued` at attempt
-- 1, unless it has limits: `roots` to publish, `limited` to claim (tasker_dispatch); every
-- other step waits `pending`.
CREATE OR REPLACE FUNCTION tasker_create_steps(batch jsonb, everything boolean, v_now timestamptz,
                                               OUT roots uuid[], OUT limited uuid[])
LANGUAGE plpgsql AS $$
BEGIN
    -- No join with tasks: a plan cached while the table was small would hash all of it on
    -- every call.
    WITH tk AS (
        SELECT x.n, x.id, x.run_at > v_now IS TRUE AS later, x.run_at, x.parent_task
        FROM tasker_new_tasks(batch) x
        WHERE everything OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = x.id)
    ), u AS (
        SELECT s.*, tk.id AS task_id, tk.later,
               s.parents = 0 AND NOT tk.later AND s.limits IS NULL AS root
        FROM jsonb_to_recordset(batch->'steps')
             AS s(task int, id uuid, name text, handler text, step_type text, branches jsonb,
                  max_attempts int, backoff text, base_ms bigint, max_ms bigint,
                  timeout_ms bigint, queue_timeout_ms bigint, parents int, batch_spec jsonb,
                  on_failure text, wait jsonb, namespace text, child jsonb, limits jsonb)
        JOIN tk ON tk.n = s.task
    ), ins AS (
        INSERT INTO steps (id, task_id, name, handler, step_type, branches, state, attempt,
                           max_attempts, backoff, base_ms, max_ms, timeout_ms, queue_timeout_ms,
                           parent_count, pending_parents, publish_count, dispatched_at,
                           dispatched_by, batch_spec, on_failure, wait, namespace, child, limits)
        SELECT u.id, u.task_id, u.name, u.handler, u.step_type, u.branches,
               CASE WHEN u.root THEN 'enqueued' ELSE 'pending' END,
               u.root::int, u.max_attempts, u.backoff, u.base_ms, u.max_ms,
               u.timeout_ms, u.queue_timeout_ms, u.parents, u.parents, u.root::int,
               CASE WHEN u.root THEN v_now END,
               CASE WHEN u.root THEN tasker_orchestrator() END,
               u.batch_spec, u.on_failure, u.wait, u.namespace, u.child, u.limits
        FROM u
    ), edges AS (
        INSERT INTO step_edges (task_id, parent_id, child_id)
        SELECT tk.id, e.parent, e.child
        FROM jsonb_to_recordset(batch->'edges') AS e(task int, parent uuid, child uuid)
        JOIN tk ON tk.n = e.task
    ), history AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT tk.id, NULL, NULL, CASE WHEN tk.later THEN 'scheduled' ELSE 'running' END,
               NULL,
               CASE WHEN tk.later THEN 'created to start at ' || tk.run_at
                    WHEN tk.parent_task IS NOT NULL
                        THEN format('started by task %s', tk.parent_task)
                    ELSE 'created' END
        FROM tk
        UNION ALL
        SELECT u.task_id, u.id, 'pending', 'enqueued', 1, 'root step' FROM u WHERE u.root
    )
    SELECT COALESCE(array_agg(u.id ORDER BY u.id) FILTER (WHERE u.root), '{}'),
           COALESCE(array_agg(u.id ORDER BY u.id)
                    FILTER (WHERE u.parents = 0 AND u.limits IS NOT NULL AND NOT u.later), '{}')
    INTO roots, limited FROM u;
END
$$;
