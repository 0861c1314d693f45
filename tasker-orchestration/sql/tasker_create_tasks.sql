-- Creates tasks, their steps and edges in one statement (one round trip, one commit): one
-- task from POST /v1/tasks, a child or a schedule's fire, or thousands from POST
-- /v1/tasks:batch, set-based either way. The caller plans the rows (tasker_shared::plan:
-- batch_worker templates are not created, their children hang off the batchable step); this
-- function owns every state written. `batch` is one object, so a new column is a new key, not
-- a new signature: {tasks: [{n, id, template_id, …, plan, step_ids}] (tasker_new_tasks), plans:
-- [{steps, edges}] (tasker_insert_tasks), one per template: a thousand tasks of one template
-- carry their steps' columns once}.
--
-- Root steps start `enqueued` and their messages are returned for publishing (the roots the
-- orchestrator holds, waits and children, are sorted out by tasker_hold) — unless their
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
-- A task with a start control (a dedupe window, `ttl_ms`, or a `debounce`) goes through
-- tasker_start_controls first, which may answer it without inserting it; the dedupe windows
-- and deadlines of the tasks created are written by tasker_created_terms.
--
-- Returns {tasks: [one per task, in order: {created: true, task_id} | {created: false,
-- task_id, template_id, context} (its key's task; `deduplicated`/`debounced`: by a start
-- control) | {created: false, parent_gone: true}], dispatch: [StepMessage], deferred?,
-- throttled?, waited?, waits?, children?, starts? (when the tasks that start controls made or
-- moved start)}.
CREATE OR REPLACE FUNCTION tasker_create_tasks(batch jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := tasker_clock();
    -- Parent steps still in flight at the attempt that starts their child.
    live uuid[] := '{}';
    children boolean := jsonb_path_exists(batch, '$.tasks[*] ? (@.parent_step != null)');
    made record;
    held record;
    out jsonb;
    claimed jsonb;
    answer jsonb;
    -- Start controls (tasker_start_controls): only when a task has one (the caller says so).
    controlled boolean := COALESCE((batch->>'controlled')::boolean, false);
    ctl record;
    to_insert jsonb := batch;
    -- The answers of the tasks start controls held back, by `n` (ctl is unset without them).
    held_back jsonb := '{}';
BEGIN
    IF children THEN
        SELECT COALESCE(array_agg(s.id), '{}') INTO live
        FROM (SELECT s.id FROM steps s
              JOIN tasker_new_tasks(batch) p
                ON s.id = p.parent_step AND s.attempt = p.parent_attempt
              WHERE s.state = 'enqueued'
              FOR UPDATE OF s) s;
    END IF;
    IF controlled THEN
        SELECT * INTO ctl FROM tasker_start_controls(batch, v_now);
        to_insert := jsonb_set(batch, '{tasks}', ctl.tasks);
        held_back := ctl.held;
    END IF;
    SELECT * INTO made FROM tasker_insert_tasks(to_insert, live, v_now);
    IF (controlled OR batch ? 'deadlines') AND cardinality(made.created) > 0 THEN
        PERFORM tasker_created_terms(to_insert->'tasks', made.created, v_now, controlled,
                                     batch ? 'deadlines');
    END IF;

    IF cardinality(made.created) = jsonb_array_length(batch->'tasks') THEN
        -- Every task asked for was created (the usual case): nothing to look up.
        SELECT jsonb_agg(jsonb_build_object('created', true, 'task_id', e.t->'id') ORDER BY e.o)
        INTO answer FROM jsonb_array_elements(batch->'tasks') WITH ORDINALITY AS e(t, o);
    ELSE
        -- Looked up one by one, and only for what this call did not create.
        SELECT COALESCE(jsonb_agg(
                   CASE WHEN held_back ? x.n::text THEN held_back->(x.n::text)
                        WHEN x.parent_step IS NOT NULL AND NOT (x.parent_step = ANY (live))
                            THEN jsonb_build_object('created', false, 'parent_gone', true)
                        WHEN EXISTS (SELECT 1 FROM tasks mine WHERE mine.id = x.id)
                            THEN jsonb_build_object('created', true, 'task_id', x.id)
                        ELSE (SELECT jsonb_build_object('created', false, 'task_id', theirs.id,
                                                        'template_id', theirs.template_id,
                                                        'context', theirs.context)
                              FROM tasks theirs
                              WHERE theirs.idempotency_key = x.key
                                AND theirs.namespace = x.namespace)
                   END ORDER BY x.n), '[]')
        INTO answer FROM tasker_new_tasks(batch) x;
    END IF;

    IF children AND cardinality(made.created) > 0 THEN
        -- Each child created is linked to the step that started it: the step waits for it.
        UPDATE steps s SET child_task_id = x.id, wake_at = 'infinity',
                           publish_count = s.publish_count + 1
        FROM tasker_new_tasks(batch) x
        WHERE x.parent_step IS NOT NULL AND s.id = x.parent_step AND x.id = ANY (made.created);
        UPDATE tasks SET has_children = true
        WHERE id IN (SELECT x.parent_task FROM tasker_new_tasks(batch) x
                     WHERE x.id = ANY (made.created))
          AND NOT has_children;
    END IF;

    SELECT * INTO held FROM tasker_hold(made.roots);
    out := jsonb_build_object('tasks', answer, 'dispatch', tasker_step_messages(held.sent));
    IF cardinality(made.limited) > 0 THEN
        claimed := tasker_dispatch(made.limited);
        out := out || jsonb_build_object('deferred', claimed->'deferred',
                                         'throttled', claimed->'throttled',
                                         'waited', claimed->'waited')
               || jsonb_build_object('dispatch', (out->'dispatch') || (claimed->'messages'));
        held.waits := held.waits || COALESCE(claimed->'waits', '[]');
        held.children := held.children || COALESCE(claimed->'children', '[]');
    END IF;
    IF controlled THEN
        out := out || jsonb_build_object('starts', ctl.starts);
    END IF;
    RETURN out || tasker_held_answer(held.waits, held.children);
END
$$;
