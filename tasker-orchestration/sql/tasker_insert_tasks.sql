-- Inserts the tasks of a tasker_create_tasks batch with their steps, edges and first
-- transitions, in one statement reading the batch once. A child task (parent_step given) is
-- inserted only when its parent step is among `live`; a repeated idempotency key inserts
-- nothing (keys are per namespace). Each task's steps and edges are its plan's (`plans`: [{steps: [{i, name, …}],
-- edges: [{p, c}]}], by template step index `i`) with its own ids (`step_ids`) and what its
-- creation made of them. A root step (no parents) of a task that starts now is stored
-- `enqueued` at attempt 1 unless it has limits; every other step waits `pending`. Returns the
-- tasks inserted (`created`), the roots to publish (`roots`) and those to claim (`limited`).
CREATE OR REPLACE FUNCTION tasker_insert_tasks(batch jsonb, live uuid[], v_now timestamptz,
    OUT created uuid[], OUT roots uuid[], OUT limited uuid[])
LANGUAGE plpgsql AS $$
BEGIN
    WITH x AS MATERIALIZED (
        SELECT * FROM tasker_new_tasks(batch)
    ), ins AS (
        INSERT INTO tasks (id, template_id, namespace, name, version, state, context,
                           idempotency_key, open_steps, run_at, parent_task_id, parent_step_id,
                           depth, on_parent_cancel, priority, token_id, root_task_id)
        SELECT x.id, x.template_id, x.namespace, x.name, x.version,
               CASE WHEN x.run_at > v_now THEN 'scheduled' ELSE 'running' END, x.context, x.key,
               x.steps, CASE WHEN x.run_at > v_now THEN x.run_at END, x.parent_task,
               x.parent_step, COALESCE(x.depth, 0), x.on_parent_cancel, COALESCE(x.priority, 1),
               x.token_id, x.root_task_id
        FROM x WHERE x.parent_step IS NULL OR x.parent_step = ANY (live)
        ORDER BY x.n
        ON CONFLICT (idempotency_key, namespace) DO NOTHING
        RETURNING id
    ), tk AS (
        SELECT x.*, x.run_at > v_now IS TRUE AS later FROM x WHERE x.id IN (SELECT id FROM ins)
    ), plan AS MATERIALIZED (
        SELECT p.ord::int - 1 AS plan, p.spec
        FROM jsonb_array_elements(batch->'plans') WITH ORDINALITY AS p(spec, ord)
    ), spec AS MATERIALIZED (
        SELECT plan.plan, s.*
        FROM plan, jsonb_to_recordset(plan.spec->'steps')
             AS s(i int, name text, handler text, step_type text, branches jsonb,
                  max_attempts int, backoff text, base_ms bigint, max_ms bigint,
                  timeout_ms bigint, queue_timeout_ms bigint, parents int, on_failure text,
                  wait jsonb, namespace text)
    ), edge AS MATERIALIZED (
        SELECT plan.plan, e.p, e.c
        FROM plan, jsonb_to_recordset(plan.spec->'edges') AS e(p int, c int)
    ), u AS (
        SELECT s.*, tk.step_ids[s.i + 1] AS id, tk.id AS task_id, tk.later, m.*,
               s.parents = 0 AND NOT tk.later AND m.limits IS NULL AS root
        FROM tk JOIN spec s ON s.plan = tk.plan
        CROSS JOIN LATERAL (SELECT NULLIF(tk.batch_specs->s.i, 'null') AS batch_spec,
                                   NULLIF(tk.children->s.i, 'null') AS child,
                                   NULLIF(tk.limits->s.i, 'null') AS limits) m
    ), steps_in AS (
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
        SELECT tk.id, tk.step_ids[e.p + 1], tk.step_ids[e.c + 1]
        FROM tk JOIN edge e ON e.plan = tk.plan
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
    SELECT (SELECT COALESCE(array_agg(id), '{}') FROM ins),
           COALESCE(array_agg(u.id ORDER BY u.id) FILTER (WHERE u.root), '{}'),
           COALESCE(array_agg(u.id ORDER BY u.id)
                    FILTER (WHERE u.parents = 0 AND u.limits IS NOT NULL AND NOT u.later), '{}')
    INTO created, roots, limited FROM u;
END
$$;
