-- Self-contained step messages (the JSON form of tasker_shared::StepMessage) for enqueued steps.
CREATE OR REPLACE FUNCTION tasker_step_messages(ids uuid[]) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT COALESCE(jsonb_agg(jsonb_build_object(
        'task_id', s.task_id, 'step_id', s.id, 'namespace', t.namespace, 'task_name', t.name,
        'step_name', s.name, 'handler', s.handler, 'attempt', s.attempt,
        'max_attempts', s.max_attempts, 'context', t.context,
        'parent_results', COALESCE((SELECT jsonb_object_agg(p.name, CASE p.state
                                        WHEN 'completed' THEN p.result
                                        ELSE jsonb_build_object('failed', true, 'error', p.error) END)
                                    FROM step_edges e JOIN steps p ON p.id = e.parent_id
                                    WHERE e.child_id = s.id
                                      AND (p.state = 'completed'
                                           OR (p.state = 'failed' AND p.on_failure = 'continue'))),
                                   '{}'::jsonb),
        'input', s.input,
        'dispatched_at', s.dispatched_at, 'timeout_ms', s.timeout_ms,
        'queue_timeout_ms', s.queue_timeout_ms) ORDER BY s.id), '[]'::jsonb)
    FROM steps s JOIN tasks t ON t.id = s.task_id
    WHERE s.id = ANY(ids) AND s.state = 'enqueued'
$$;
