-- Creates tasks, their steps and edges in one statement (one round trip, one commit): one
-- task from POST /v1/tasks, a child or a schedule's fire, or thousands from POST
-- /v1/tasks:batch, set-based either way. The caller plans the rows (tasker_shared::plan:
-- batch_worker templates are not created, their children hang off the batchable step); this
-- function owns every state written. Task columns are arrays (t_*), one element per task;
-- step columns (s_*) and edges (e_*) say which task they belong to by its position in t_*
-- (s_task, e_task, 1-based); t_steps is each task's number of steps.
--
-- Root steps (no parents) start `enqueued` at attempt 1 and their messages are returned for
-- publishing — unless their task starts later (its run_at in the future): then it is
-- `scheduled`, every step waits `pending`, and tasker_start_tasks starts it when its time
-- comes. A root with limits waits `pending` and claims them here (tasker_dispatch).
--
-- A repeated idempotency key creates nothing and answers the existing task, with its template
-- and context so the caller can tell a retry of the same request from a different one.
--
-- A child task (t_parent_step given) is created only while that parent step is in flight at
-- t_parent_attempt, and is linked to it in the same transaction: the step holds the child's
-- id and waits (`wake_at` infinity) until the child's end wakes it (tasker_task_ended). Its key
-- is `child:<step>:<attempt>`, so a start repeated after a crash answers the same child.
--
-- `t_meta` holds what else a task records, one JSON object per task (a new task column is a key
-- here, not a new parameter): `token_id` (the API token that created it, or its root's) and
-- `root_task_id` (a child's root). The signature without it (37 parameters) remains for
-- orchestrators of the previous release during a rolling upgrade; it records neither.
--
-- Returns {tasks: [one per task, in order: {created: true, task_id} | {created: false,
-- task_id, template_id, context} (its key's task) | {created: false, parent_gone: true}],
-- dispatch: [StepMessage], deferred?, throttled?, waited?}.
CREATE OR REPLACE FUNCTION tasker_create_tasks(
    t_id uuid[], t_template uuid[], t_namespace text[], t_name text[], t_version text[],
    t_context jsonb[], t_key text[], t_run_at timestamptz[],
    t_parent_task uuid[], t_parent_step uuid[], t_parent_attempt int[], t_depth int[],
    t_on_parent_cancel text[], t_priority smallint[], t_steps int[],
    s_task int[], s_id uuid[], s_name text[], s_handler text[], s_type text[],
    s_branches jsonb[], s_max_attempts int[], s_backoff text[], s_base_ms bigint[],
    s_max_ms bigint[], s_timeout_ms bigint[], s_queue_timeout_ms bigint[], s_parents int[],
    s_batch_spec jsonb[], s_on_failure text[], s_wait jsonb[], s_namespace text[],
    s_child jsonb[], s_limits jsonb[],
    e_task int[], e_parent uuid[], e_child uuid[], t_meta jsonb[])
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    -- Parent steps still in flight at the attempt that starts their child.
    live uuid[] := '{}';
    children boolean := false;
    -- The ids this call inserted, and whether that is every task asked for (the usual case:
    -- then nothing below looks a task up again).
    created uuid[];
    everything boolean;
    roots uuid[];
    limited uuid[];
    messages jsonb;
    claimed jsonb;
    answer jsonb;
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(t_parent_step) AS p WHERE p IS NOT NULL) THEN
        children := true;
        SELECT COALESCE(array_agg(s.id), '{}') INTO live
        FROM (SELECT s.id FROM steps s
              JOIN unnest(t_parent_step, t_parent_attempt) AS p(step, attempt)
                ON s.id = p.step AND s.attempt = p.attempt
              WHERE s.state = 'enqueued'
              FOR UPDATE OF s) s;
    END IF;

    WITH ins AS (
        INSERT INTO tasks (id, template_id, namespace, name, version, state, context, idempotency_key,
                           open_steps, run_at, parent_task_id, parent_step_id, depth,
                           on_parent_cancel, priority, token_id, root_task_id)
        SELECT x.id, x.template, x.namespace, x.name, x.version,
               CASE WHEN x.run_at > v_now THEN 'scheduled' ELSE 'running' END, x.context, x.key,
               x.steps, CASE WHEN x.run_at > v_now THEN x.run_at END, x.parent_task, x.parent_step,
               COALESCE(x.depth, 0), x.on_parent_cancel, COALESCE(x.priority, 1),
               (x.meta->>'token_id')::bigint, (x.meta->>'root_task_id')::uuid
        FROM unnest(t_id, t_template, t_namespace, t_name, t_version, t_context, t_key, t_run_at,
                    t_parent_task, t_parent_step, t_depth, t_on_parent_cancel, t_priority, t_steps,
                    t_meta)
             WITH ORDINALITY AS x(id, template, namespace, name, version, context, key, run_at,
                                  parent_task, parent_step, depth, on_parent_cancel, priority, steps,
                                  meta, ord)
        WHERE x.parent_step IS NULL OR x.parent_step = ANY (live)
        ORDER BY x.ord
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id
    )
    SELECT COALESCE(array_agg(id), '{}') INTO created FROM ins;
    everything := cardinality(created) = cardinality(t_id);

    roots := '{}';
    limited := '{}';
    IF cardinality(created) > 0 THEN
        -- The tasks this call created (a repeated key's was not), their steps, edges and
        -- first transitions, all in one statement. No join with tasks: a plan cached while
        -- the table was small would hash all of it on every call; a look-up by primary key is
        -- made only when some task was not created.
        WITH tk AS (
            SELECT x.ord, x.id, x.run_at > v_now IS TRUE AS later, x.run_at, x.parent_task
            FROM unnest(t_id, t_run_at, t_parent_task) WITH ORDINALITY AS x(id, run_at, parent_task, ord)
            WHERE everything OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = x.id)
        ), u AS (
            SELECT s.*, tk.id AS task_id, tk.later,
                   s.parents = 0 AND NOT tk.later AND s.limits IS NULL AS root
            FROM unnest(s_task, s_id, s_name, s_handler, s_type, s_branches, s_max_attempts,
                        s_backoff, s_base_ms, s_max_ms, s_timeout_ms, s_queue_timeout_ms,
                        s_parents, s_batch_spec, s_on_failure, s_wait, s_namespace, s_child,
                        s_limits)
                 AS s(task, id, name, handler, step_type, branches, max_attempts, backoff,
                      base_ms, max_ms, timeout_ms, queue_timeout_ms, parents, batch_spec,
                      on_failure, wait, namespace, child, limits)
            JOIN tk ON tk.ord = s.task
        ), ins AS (
            INSERT INTO steps (id, task_id, name, handler, step_type, branches, state, attempt,
                               max_attempts, backoff, base_ms, max_ms, timeout_ms,
                               queue_timeout_ms, parent_count, pending_parents, publish_count,
                               dispatched_at, dispatched_by, batch_spec, on_failure, wait,
                               namespace, child, limits)
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
            SELECT tk.id, e.p, e.c
            FROM unnest(e_task, e_parent, e_child) AS e(task, p, c)
            JOIN tk ON tk.ord = e.task
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
                        FILTER (WHERE u.parents = 0 AND u.limits IS NOT NULL AND NOT u.later),
                        '{}')
        INTO roots, limited FROM u;

        IF children THEN
            UPDATE steps s SET child_task_id = x.id, wake_at = 'infinity',
                               publish_count = s.publish_count + 1
            FROM unnest(t_id, t_parent_step) AS x(id, step)
            JOIN tasks t ON t.id = x.id
            WHERE x.step IS NOT NULL AND s.id = x.step;
            UPDATE tasks SET has_children = true
            WHERE id IN (SELECT t.parent_task_id FROM unnest(t_id) AS x(id)
                         JOIN tasks t ON t.id = x.id WHERE t.parent_task_id IS NOT NULL)
              AND NOT has_children;
        END IF;
    END IF;

    -- Looked up one by one, and only for what this call did not create (see tk above).
    SELECT COALESCE(jsonb_agg(
               CASE WHEN x.parent_step IS NOT NULL AND NOT (x.parent_step = ANY (live))
                        THEN jsonb_build_object('created', false, 'parent_gone', true)
                    WHEN everything OR EXISTS (SELECT 1 FROM tasks mine WHERE mine.id = x.id)
                        THEN jsonb_build_object('created', true, 'task_id', x.id)
                    ELSE (SELECT jsonb_build_object('created', false, 'task_id', theirs.id,
                                                    'template_id', theirs.template_id,
                                                    'context', theirs.context)
                          FROM tasks theirs WHERE theirs.idempotency_key = x.key)
               END ORDER BY x.ord), '[]')
    INTO answer
    FROM unnest(t_id, t_key, t_parent_step) WITH ORDINALITY AS x(id, key, parent_step, ord);

    messages := tasker_step_messages(roots);
    IF cardinality(limited) > 0 THEN
        claimed := tasker_dispatch(limited);
        RETURN jsonb_build_object('tasks', answer, 'dispatch', messages || (claimed->'messages'),
                                  'deferred', claimed->'deferred',
                                  'throttled', claimed->'throttled', 'waited', claimed->'waited');
    END IF;
    RETURN jsonb_build_object('tasks', answer, 'dispatch', messages);
END
$$;

-- The previous release's signature, for orchestrators still running it during an upgrade.
CREATE OR REPLACE FUNCTION tasker_create_tasks(
    t_id uuid[], t_template uuid[], t_namespace text[], t_name text[], t_version text[],
    t_context jsonb[], t_key text[], t_run_at timestamptz[],
    t_parent_task uuid[], t_parent_step uuid[], t_parent_attempt int[], t_depth int[],
    t_on_parent_cancel text[], t_priority smallint[], t_steps int[],
    s_task int[], s_id uuid[], s_name text[], s_handler text[], s_type text[],
    s_branches jsonb[], s_max_attempts int[], s_backoff text[], s_base_ms bigint[],
    s_max_ms bigint[], s_timeout_ms bigint[], s_queue_timeout_ms bigint[], s_parents int[],
    s_batch_spec jsonb[], s_on_failure text[], s_wait jsonb[], s_namespace text[],
    s_child jsonb[], s_limits jsonb[],
    e_task int[], e_parent uuid[], e_child uuid[])
RETURNS jsonb LANGUAGE sql AS $$
    SELECT tasker_create_tasks(t_id, t_template, t_namespace, t_name, t_version, t_context, t_key,
                               t_run_at, t_parent_task, t_parent_step, t_parent_attempt, t_depth,
                               t_on_parent_cancel, t_priority, t_steps, s_task, s_id, s_name,
                               s_handler, s_type, s_branches, s_max_attempts, s_backoff, s_base_ms,
                               s_max_ms, s_timeout_ms, s_queue_timeout_ms, s_parents, s_batch_spec,
                               s_on_failure, s_wait, s_namespace, s_child, s_limits, e_task,
                               e_parent, e_child, NULL::jsonb[])
$$;
