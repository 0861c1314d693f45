-- Creates a task, its steps and edges in one statement (one round trip, one commit). The caller
-- plans the rows (tasker_shared::plan: batch_worker templates are not created, their children
-- hang off the batchable step); this function owns every state written. Root steps (no parents)
-- start `enqueued` at attempt 1 and their messages are returned for publishing — unless the
-- task starts later (`v_run_at` in the future): then it is `scheduled`, every step waits
-- `pending`, and tasker_start_tasks starts it when its time comes.
--
-- A repeated idempotency key creates nothing and answers the existing task, with its template
-- and context so the caller can tell a retry of the same request from a different one.
--
-- A child task (`v_parent_step` given) is created only while that parent step is in flight at
-- `v_parent_attempt`, and is linked to it in the same transaction: the step holds the child's
-- id and waits (`wake_at` infinity) until the child's end wakes it (tasker_task_ended). Its key
-- is `child:<step>:<attempt>`, so a start repeated after a crash answers the same child.
--
-- Returns {created, task_id, template_id, context, dispatch: [StepMessage]}, or
-- {created: false, parent_gone: true} when the parent step is no longer in flight.
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, uuid[], text[], text[], text[], jsonb[], int[],
    text[], bigint[], bigint[], bigint[], bigint[], int[], jsonb[], text[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, timestamptz, uuid[], text[], text[], text[],
    jsonb[], int[], text[], bigint[], bigint[], bigint[], bigint[], int[], jsonb[], text[],
    jsonb[], uuid[], uuid[]);
DROP FUNCTION IF EXISTS tasker_create_task(
    uuid, uuid, text, text, text, jsonb, text, timestamptz, uuid, uuid, int, int, text,
    uuid[], text[], text[], text[], jsonb[], int[], text[], bigint[], bigint[], bigint[],
    bigint[], int[], jsonb[], text[], jsonb[], text[], jsonb[], uuid[], uuid[]);
CREATE OR REPLACE FUNCTION tasker_create_task(
    v_id uuid, v_template uuid, v_namespace text, v_name text, v_version text, v_context jsonb,
    v_key text, v_run_at timestamptz,
    v_parent_task uuid, v_parent_step uuid, v_parent_attempt int, v_depth int,
    v_on_parent_cancel text, v_priority smallint,
    s_id uuid[], s_name text[], s_handler text[], s_type text[], s_branches jsonb[],
    s_max_attempts int[], s_backoff text[], s_base_ms bigint[], s_max_ms bigint[],
    s_timeout_ms bigint[], s_queue_timeout_ms bigint[], s_parents int[], s_batch_spec jsonb[],
    s_on_failure text[], s_wait jsonb[], s_namespace text[], s_child jsonb[], s_limits jsonb[],
    e_parent uuid[], e_child uuid[])
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    roots uuid[];
    limited uuid[];
    claimed jsonb;
    existing record;
    later boolean := v_run_at IS NOT NULL AND v_run_at > clock_timestamp();
BEGIN
    IF v_parent_step IS NOT NULL THEN
        PERFORM 1 FROM steps
        WHERE id = v_parent_step AND attempt = v_parent_attempt AND state = 'enqueued'
        FOR UPDATE;
        IF NOT FOUND THEN
            RETURN jsonb_build_object('created', false, 'parent_gone', true);
        END IF;
    END IF;
    INSERT INTO tasks (id, template_id, namespace, name, version, state, context, idempotency_key,
                       open_steps, run_at, parent_task_id, parent_step_id, depth,
                       on_parent_cancel, priority)
    VALUES (v_id, v_template, v_namespace, v_name, v_version,
            CASE WHEN later THEN 'scheduled' ELSE 'running' END, v_context, v_key,
            cardinality(s_id), CASE WHEN later THEN v_run_at END, v_parent_task, v_parent_step,
            COALESCE(v_depth, 0), v_on_parent_cancel, COALESCE(v_priority, 1))
    ON CONFLICT (idempotency_key) DO NOTHING;
    IF NOT FOUND THEN
        SELECT id, template_id, context INTO existing FROM tasks WHERE idempotency_key = v_key;
        RETURN jsonb_build_object('created', false, 'task_id', existing.id,
                                  'template_id', existing.template_id,
                                  'context', existing.context, 'dispatch', '[]'::jsonb);
    END IF;

    WITH ins AS (
        INSERT INTO steps (id, task_id, name, handler, step_type, branches, state, attempt,
                           max_attempts, backoff, base_ms, max_ms, timeout_ms, queue_timeout_ms,
                           parent_count, pending_parents, publish_count, dispatched_at,
                           dispatched_by, batch_spec, on_failure, wait, namespace, child, limits)
        SELECT u.id, v_id, u.name, u.handler, u.step_type, u.branches,
               CASE WHEN u.root THEN 'enqueued' ELSE 'pending' END,
               u.root::int, u.max_attempts, u.backoff, u.base_ms, u.max_ms,
               u.timeout_ms, u.queue_timeout_ms, u.parents, u.parents, u.root::int,
               CASE WHEN u.root THEN clock_timestamp() END,
               CASE WHEN u.root THEN tasker_orchestrator() END,
               u.batch_spec, u.on_failure, u.wait, u.namespace, u.child, u.limits
        -- A root with limits waits `pending` here and claims them below (tasker_dispatch).
        FROM (SELECT x.*, x.parents = 0 AND NOT later AND x.limits IS NULL AS root
              FROM unnest(s_id, s_name, s_handler, s_type, s_branches, s_max_attempts, s_backoff,
                          s_base_ms, s_max_ms, s_timeout_ms, s_queue_timeout_ms, s_parents,
                          s_batch_spec, s_on_failure, s_wait, s_namespace, s_child, s_limits)
                   AS x(id, name, handler, step_type, branches, max_attempts, backoff, base_ms,
                        max_ms, timeout_ms, queue_timeout_ms, parents, batch_spec, on_failure,
                        wait, namespace, child, limits)) u
        RETURNING id, state, limits IS NOT NULL AND parent_count = 0 AS claims
    )
    SELECT COALESCE(array_agg(id ORDER BY id) FILTER (WHERE state = 'enqueued'), '{}'),
           COALESCE(array_agg(id ORDER BY id) FILTER (WHERE claims AND NOT later), '{}')
    INTO roots, limited FROM ins;

    INSERT INTO step_edges (task_id, parent_id, child_id)
    SELECT v_id, e.p, e.c FROM unnest(e_parent, e_child) AS e(p, c);

    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    SELECT v_id, NULL, NULL, CASE WHEN later THEN 'scheduled' ELSE 'running' END, NULL,
           CASE WHEN later THEN 'created to start at ' || v_run_at
                WHEN v_parent_step IS NOT NULL THEN format('started by task %s', v_parent_task)
                ELSE 'created' END
    UNION ALL
    SELECT v_id, r, 'pending', 'enqueued', 1, 'root step' FROM unnest(roots) AS r;

    IF v_parent_step IS NOT NULL THEN
        UPDATE steps SET child_task_id = v_id, wake_at = 'infinity',
                         publish_count = publish_count + 1
        WHERE id = v_parent_step;
        UPDATE tasks SET has_children = true WHERE id = v_parent_task AND NOT has_children;
    END IF;

    IF cardinality(limited) > 0 THEN
        claimed := tasker_dispatch(limited);
        RETURN jsonb_build_object('created', true, 'task_id', v_id, 'template_id', v_template,
                                  'context', v_context,
                                  'dispatch', tasker_step_messages(roots) || (claimed->'messages'),
                                  'deferred', claimed->'deferred',
                                  'throttled', claimed->'throttled', 'waited', claimed->'waited');
    END IF;
    RETURN jsonb_build_object('created', true, 'task_id', v_id, 'template_id', v_template,
                              'context', v_context, 'dispatch', tasker_step_messages(roots));
END
$$;
