-- Of steps just enqueued (or found unpublished by the sweeper), those the orchestrator holds
-- itself instead of sending them to a worker (tasker_held): a wait step's wait begins here, in
-- the transaction that dispatched it (tasker_begin_waits: its wake time is set), and a child
-- step is handed back to start its child task (which links the two in a transaction of its
-- own, keyed `child:<step>:<attempt>`, so a crash before that finds the step to start again).
-- `sent`: the others, in id order, whose messages go to the workers' queues;
-- `waits`: [{step_id, delay_ms}] of the waits begun, when to look again;
-- `children`: [{step_id, attempt}] of the child steps to start.
CREATE OR REPLACE FUNCTION tasker_hold(ids uuid[], OUT sent uuid[], OUT waits jsonb,
                                       OUT children jsonb)
LANGUAGE plpgsql
-- Driven by step ids: index lookups whatever the statistics say.
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    wait_ids uuid[];
    wait_attempts int[];
BEGIN
    waits := '[]';
    children := '[]';
    IF COALESCE(cardinality(ids), 0) = 0 THEN
        sent := '{}';
        RETURN;
    END IF;
    SELECT COALESCE(array_agg(s.id ORDER BY s.id)
                        FILTER (WHERE s.step_type NOT IN ('wait', 'child')), '{}'),
           array_agg(s.id ORDER BY s.id) FILTER (WHERE s.step_type = 'wait'),
           array_agg(s.attempt ORDER BY s.id) FILTER (WHERE s.step_type = 'wait'),
           COALESCE(jsonb_agg(jsonb_build_object('step_id', s.id, 'attempt', s.attempt)
                              ORDER BY s.id)
                        FILTER (WHERE s.step_type = 'child' AND s.child_task_id IS NULL), '[]')
    INTO sent, wait_ids, wait_attempts, children
    FROM unnest(ids) AS i(id)
    CROSS JOIN LATERAL (SELECT id, step_type, attempt, child_task_id
                        FROM steps WHERE id = i.id OFFSET 0) s;
    IF wait_ids IS NOT NULL THEN
        waits := tasker_begin_waits(wait_ids, wait_attempts);
    END IF;
END
$$;

-- The held part of a dispatch's answer: `waits` and `children`, each only when not empty (most
-- dispatches hold nothing, and their answers carry no more bytes for it).
CREATE OR REPLACE FUNCTION tasker_held_answer(waits jsonb, children jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN COALESCE(jsonb_array_length(waits), 0) = 0 THEN '{}'::jsonb
                ELSE jsonb_build_object('waits', waits) END
           || CASE WHEN COALESCE(jsonb_array_length(children), 0) = 0 THEN '{}'::jsonb
                   ELSE jsonb_build_object('children', children) END
$$;
