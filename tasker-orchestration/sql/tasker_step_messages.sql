-- Self-contained step messages (the JSON form of tasker_shared::StepMessage) for enqueued steps
-- sent to workers.
-- A context larger than the session's `tasker.inline_max_bytes` (as JSON text), and parent
-- results more numerous than `tasker.inline_max_parents` or larger than that, are left
-- out and flagged: the worker core fetches them from the orchestrator, so no message grows
-- with the task context or with the fan-out.
-- PL/pgSQL rather than SQL so the query is planned once per session, not on every call.
CREATE OR REPLACE FUNCTION tasker_step_messages(ids uuid[]) RETURNS jsonb LANGUAGE plpgsql STABLE
-- Every statement here is driven by step ids: index lookups whatever the statistics say (a
-- 100,000-step fan-out grows the tables faster than autovacuum re-analyzes them).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    max_bytes int := COALESCE(NULLIF(current_setting('tasker.inline_max_bytes', true), '')::int, 65536);
    max_parents int := COALESCE(NULLIF(current_setting('tasker.inline_max_parents', true), '')::int, 1000);
BEGIN
    RETURN (SELECT COALESCE(jsonb_agg(jsonb_build_object(
        'task_id', s.task_id, 'step_id', s.id, 'namespace', COALESCE(s.namespace, t.namespace), 'task_name', t.name,
        'step_name', s.name, 'handler', s.handler, 'attempt', s.attempt,
        'max_attempts', s.attempt_base + s.max_attempts,
        'context', CASE WHEN c.by_ref THEN NULL ELSE t.context END,
        'context_by_reference', c.by_ref,
        'parent_results', CASE WHEN r.by_ref THEN '{}'::jsonb ELSE r.results END,
        'parent_results_by_reference', r.by_ref,
        'input', s.input,
        'dispatched_at', s.dispatched_at, 'timeout_ms', s.timeout_ms,
        'queue_timeout_ms', s.queue_timeout_ms, 'traceparent', t.traceparent)
        -- A task's priority only when it is not normal: most messages carry no more bytes.
        || CASE t.priority WHEN 0 THEN '{"priority": "high"}'::jsonb
                           WHEN 2 THEN '{"priority": "low"}'::jsonb ELSE '{}'::jsonb END
        -- Sent again (tasker_sweep's republish): the worker checks the attempt is still open.
        || CASE WHEN s.publish_count > 1 THEN '{"resent": true}'::jsonb ELSE '{}'::jsonb END
        ORDER BY s.id),
        '[]'::jsonb)
    -- Driven by the ids, a primary-key lookup each (LATERAL … OFFSET 0 fixes the join order), whatever
    -- the plan cached for the session guessed about the table when it was small.
    FROM unnest(ids) AS i(id)
    CROSS JOIN LATERAL (SELECT * FROM steps WHERE id = i.id OFFSET 0) s
    JOIN tasks t ON t.id = s.task_id
    -- Sizes as sent (JSON text), not as stored (compressed).
    CROSS JOIN LATERAL (SELECT octet_length(t.context::text) > max_bytes AS by_ref) c
    -- Parent results: none to read for a root or a batch worker (most steps of a fan-out); by
    -- reference for many parents; otherwise read once per step (OFFSET 0 keeps the planner
    -- from inlining the subquery and evaluating it once per use).
    CROSS JOIN LATERAL (
        SELECT q.results, q.results IS NULL OR octet_length(q.results::text) > max_bytes AS by_ref
        FROM (SELECT CASE WHEN s.parent_count = 0 THEN '{}'::jsonb
                          WHEN s.parent_count > max_parents THEN NULL
                          ELSE COALESCE((SELECT jsonb_object_agg(p.name, CASE p.state
                                           WHEN 'completed' THEN p.result
                                           ELSE jsonb_build_object('failed', true, 'error', p.error) END)
                                FROM step_edges e JOIN steps p ON p.id = e.parent_id
                                WHERE e.child_id = s.id
                                  AND (p.state = 'completed'
                                       OR (p.state = 'failed' AND p.on_failure = 'continue'))),
                                '{}'::jsonb)
                     END AS results
              OFFSET 0) q
    ) r
    -- Never a step the orchestrator holds (tasker_hold sorts them out before): no worker's
    -- queue ever gets a wait or a child step.
    WHERE s.state = 'enqueued' AND s.step_type NOT IN ('wait', 'child'));
END
$$;
