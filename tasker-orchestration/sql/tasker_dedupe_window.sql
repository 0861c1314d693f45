-- A dedupe window's answer to a request of namespace `ns` with idempotency key `k`
-- (tasker_start_controls): a window past its time is removed first, and its task (if still
-- kept) lets go of the key, so the request starts a new task. A window that lasts and whose
-- task was purged answers {created: false, task_id, template_id, context, deduplicated: true,
-- until}; otherwise NULL: the key is free, or its task is kept and answers it as any
-- idempotency key's does. Keys are per namespace (the two-argument form before them is unused).
CREATE OR REPLACE FUNCTION tasker_dedupe_window(ns text, k text, v_now timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    w task_keys;
BEGIN
    WITH gone AS (
        DELETE FROM task_keys WHERE namespace = ns AND key = k AND expires_at <= v_now
        RETURNING key, task_id
    )
    UPDATE tasks SET idempotency_key = NULL
    FROM gone WHERE tasks.id = gone.task_id AND tasks.idempotency_key = gone.key;
    SELECT * INTO w FROM task_keys WHERE namespace = ns AND key = k;
    IF NOT FOUND OR EXISTS (SELECT 1 FROM tasks WHERE idempotency_key = k AND namespace = ns) THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object('created', false, 'task_id', w.task_id,
                              'template_id', w.template_id, 'context', w.context,
                              'deduplicated', true, 'until', w.expires_at);
END
$$;
