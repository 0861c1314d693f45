-- What the tasks tasker_create_tasks just created keep beyond their rows (`tasks`: the batch's
-- tasks as inserted, `created`: the ids that were): each dedupe window (`ttl_ms`) answers its
-- task for its TTL (task_keys), and each deadline (`deadline_ms`, `deadline_action`) is set on
-- its task, counted from now for a task that starts now (tasker_start_tasks sets it for one
-- that starts later). `windows` and `deadlines` say whether any task has one.
CREATE OR REPLACE FUNCTION tasker_created_terms(tasks jsonb, created uuid[], v_now timestamptz,
                                                windows boolean, deadlines boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF windows THEN
        INSERT INTO task_keys AS k (namespace, key, task_id, template_id, context, expires_at)
        SELECT t->>'namespace', t->>'key', (t->>'id')::uuid, (t->>'template_id')::uuid,
               t->'context', v_now + (t->>'ttl_ms')::bigint * interval '1 millisecond'
        FROM jsonb_array_elements(tasks) t
        WHERE t ? 'ttl_ms' AND (t->>'id')::uuid = ANY (created)
        ON CONFLICT (namespace, key) DO UPDATE
            SET task_id = excluded.task_id, template_id = excluded.template_id,
                context = excluded.context, expires_at = excluded.expires_at;
    END IF;
    IF deadlines THEN
        UPDATE tasks t
        SET deadline_ms = d.deadline_ms, deadline_action = d.deadline_action,
            deadline_at = CASE WHEN t.state = 'running'
                               THEN v_now + d.deadline_ms * interval '1 millisecond' END
        FROM jsonb_to_recordset(tasks) AS d(id uuid, deadline_ms bigint, deadline_action text)
        WHERE d.deadline_ms IS NOT NULL AND t.id = d.id AND t.id = ANY (created);
    END IF;
END
$$;
