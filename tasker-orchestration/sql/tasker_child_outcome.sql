-- What a child step waiting on task `child` comes to (tasker_wake): {"outcome": …} once the
-- child ended — success with its result (tasker_task_result), or a permanent failure
-- `child_failed` / `child_cancelled` naming the child (a retry of the step starts a new child)
-- — or {"rearm": …}, when to look again: never (`infinity`, its end wakes the step) while it
-- runs, or NULL when there is no child (its start puts the step back).
CREATE OR REPLACE FUNCTION tasker_child_outcome(child uuid)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    ch record;
BEGIN
    SELECT id, state, error, namespace, name, version INTO ch FROM tasks WHERE id = child;
    IF ch.state = 'complete' THEN
        RETURN jsonb_build_object('outcome', jsonb_build_object(
            'status', 'success', 'result', tasker_task_result(ch.id)));
    ELSIF ch.state IN ('error', 'cancelled') THEN
        RETURN jsonb_build_object('outcome', jsonb_build_object(
            'status', 'failure', 'retryable', false,
            'error', jsonb_build_object(
                'kind', CASE ch.state WHEN 'error' THEN 'child_failed' ELSE 'child_cancelled' END,
                'message', format('child task %s (%s/%s@%s) ended %s%s', ch.id, ch.namespace,
                                  ch.name, ch.version, ch.state,
                                  COALESCE(': ' || (ch.error->>'message'), '')),
                'child_task_id', ch.id)));
    END IF;
    RETURN jsonb_build_object('rearm', CASE WHEN ch.id IS NULL THEN NULL ELSE 'infinity' END);
END
$$;
