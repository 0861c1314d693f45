-- Creates tasks, their steps and edges in one statement (one round trip, one commit): one
-- task from POST /v1/tasks, a child or a schedule's fire, or thousands from POST
-- /v1/tasks:batch, set-based either way. The caller plans the rows (tasker_shared::plan:
-- batch_worker templates are not created, their children hang off the batchable step); this
-- function owns every state written. `batch` is one object, so a new column is a new key, not
-- a new signature: {tasks: [{n, id, template_id, namespace, name, version, context, key,
-- run_at, parent_task, parent_step, parent_attempt, depth, on_parent_cancel, priority, steps,
-- token_id, root_task_id}] (tasker_new_tasks), steps: [{task, id, name, …}] and edges: [{task,
-- parent, child}] (tasker_create_steps), a step's and an edge's `task` its task's `n`}.
--
-- Root steps start `enqueued` and their messages are returned for publishing — unless their
-- task starts later (its run_at in the future): then it is `scheduled`, every step waits
-- `pending`, and tasker_start_tasks starts it when its time comes. A root with limits waits
-- `pending` and claims them here (tasker_dispatch). A repeated idempotency key creates nothing
-- and answers the existing task, with its template and context so the caller can tell a retry
-- of the same request from a different one.
--
-- A child task (parent_step given) is created only while that parent step is in flight at
-- parent_attempt, and is linked to it in the same transaction: the step holds the child's id
-- and waits (`wake_at` infinity) until the child's end wakes it (tasker_task_ended). Its key is
-- `child:<step>:<attempt>`, so a start repeated after a crash answers the same child.
--
-- Returns {tasks: [one per task, in order: {created: true, task_id} | {created: false,
-- task_id, template_id, context} (its key's task) | {created: false, parent_gone: true}],
-- dispatch: [StepMessage], deferred?, throttled?, waited?}.
CREATE OR REPLACE FUNCTION tasker_create_tasks(batch jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    -- Parent steps still in flight at the attempt that starts their child.
    live uuid[] := '{}';
    children boolean := jsonb_path_exists(batch, '$.tasks[*] ? (@.parent_step != null)');
    -- The ids this call inserted, and whether that is every task asked for (the usual case:
    -- then nothing below looks a task up again).
    created uuid[];
    everything boolean;
    roots uuid[] := '{}';
    limited uuid[] := '{}';
    claimed jsonb;
    answer jsonb;
BEGIN
    IF children THEN
        SELECT COALESCE(array_agg(s.id), '{}') INTO live
        FROM (SELECT s.id FROM steps s
              JOIN tasker_new_tasks(batch) p
                ON s.id = p.parent_step AND s.attempt = p.parent_attempt
              WHERE s.state = 'enqueued'
              FOR UPDATE OF s) s;
    END IF;

    WITH ins AS (
        INSERT INTO tasks (id, template_id, namespace, name, version, state, context,
                           idempotency_key, open_steps, run_at, parent_task_id, parent_step_id,
                           depth, on_parent_cancel, priority, token_id, root_task_id)
        SELECT x.id, x.template_id, x.namespace, x.name, x.version,
               CASE WHEN x.run_at > v_now THEN 'scheduled' ELSE 'running' END, x.context, x.key,
               x.steps, CASE WHEN x.run_at > v_now THEN x.run_at END, x.parent_task,
               x.parent_step, COALESCE(x.depth, 0), x.on_parent_cancel, COALESCE(x.priority, 1),
               x.token_id, x.root_task_id
        FROM tasker_new_tasks(batch) x
        WHERE x.parent_step IS NULL OR x.parent_step = ANY (live)
        ORDER BY x.n
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id
    )
    SELECT COALESCE(array_agg(id), '{}') INTO created FROM ins;
    everything := cardinality(created) = jsonb_array_length(batch->'tasks');

    IF cardinality(created) > 0 THEN
        SELECT c.roots, c.limited INTO roots, limited
        FROM tasker_create_steps(batch, everything, v_now) c;
        IF children THEN
            UPDATE steps s SET child_task_id = x.id, wake_at = 'infinity',
                               publish_count = s.publish_count + 1
            FROM tasker_new_tasks(batch) x
            JOIN tasks t ON t.id = x.id
            WHERE x.parent_step IS NOT NULL AND s.id = x.parent_step;
            UPDATE tasks SET has_children = true
            WHERE id IN (SELECT x.parent_task FROM tasker_new_tasks(batch) x
                         JOIN tasks t ON t.id = x.id WHERE x.parent_task IS NOT NULL)
              AND NOT has_children;
        END IF;
    END IF;

    -- Looked up one by one, and only for what this call did not create.
    SELECT COALESCE(jsonb_agg(
               CASE WHEN x.parent_step IS NOT NULL AND NOT (x.parent_step = ANY (live))
                        THEN jsonb_build_object('created', false, 'parent_gone', true)
                    WHEN everything OR EXISTS (SELECT 1 FROM tasks mine WHERE mine.id = x.id)
                        THEN jsonb_build_object('created', true, 'task_id', x.id)
                    ELSE (SELECT jsonb_build_object('created', false, 'task_id', theirs.id,
                                                    'template_id', theirs.template_id,
                                                    'context', theirs.context)
                          FROM tasks theirs WHERE theirs.idempotency_key = x.key)
               END ORDER BY x.n), '[]')
    INTO answer FROM tasker_new_tasks(batch) x;

    IF cardinality(limited) > 0 THEN
        claimed := tasker_dispatch(limited);
        RETURN jsonb_build_object('tasks', answer,
                                  'dispatch', tasker_step_messages(roots) || (claimed->'messages'),
                                  'deferred', claimed->'deferred',
                                  'throttled', claimed->'throttled', 'waited', claimed->'waited');
    END IF;
    RETURN jsonb_build_object('tasks', answer, 'dispatch', tasker_step_messages(roots));
END
$$;
