-- Creates one instance of a batchable step's batch_worker per batch, with nothing to wait for,
-- wired to the worker's children, whose counters grow by the number of batches. With `enqueue`
-- (a worker without limits, applied by a result) they are written `enqueued` at attempt 1 with
-- their history row, as a task's roots are (tasker_insert_tasks): one version of each row, not
-- an insert and then an update of every one of a 100,000-way fan-out; otherwise `pending`, for
-- tasker_dispatch. A fan-out of 1,000 or more is counted down on tallies (migration 0036).
-- Returns the new step ids, in id order.
CREATE OR REPLACE FUNCTION tasker_insert_batch_workers(v_task uuid, spec jsonb, batches jsonb,
                                                       enqueue boolean) RETURNS uuid[]
LANGUAGE plpgsql AS $$
DECLARE
    n int := jsonb_array_length(batches);
    v_now timestamptz := tasker_clock();
    ids uuid[];
BEGIN
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    WITH b AS (
        SELECT tasker_uuid_v7() AS id, e.value AS input, e.ordinality - 1 AS i
        FROM jsonb_array_elements(batches) WITH ORDINALITY AS e
    ), ins AS (
        INSERT INTO steps (id, task_id, name, handler, step_type, state, attempt, max_attempts,
                           backoff, base_ms, max_ms, timeout_ms, queue_timeout_ms, parent_count,
                           pending_parents, publish_count, dispatched_at, dispatched_by, input,
                           on_failure, namespace, limits)
        SELECT b.id, v_task, (spec->>'name') || '#' || b.i, spec->>'handler', 'batch_worker',
               CASE WHEN enqueue THEN 'enqueued' ELSE 'pending' END, enqueue::int,
               (spec->>'max_attempts')::int, spec->>'backoff',
               (spec->>'base_ms')::bigint, (spec->>'max_ms')::bigint, (spec->>'timeout_ms')::bigint,
               (spec->>'queue_timeout_ms')::bigint, 0, 0, enqueue::int,
               CASE WHEN enqueue THEN v_now END, CASE WHEN enqueue THEN tasker_orchestrator() END,
               b.input, spec->>'on_failure', spec->>'namespace', NULLIF(spec->'limits', 'null')
        FROM b
        RETURNING id
    ), kids AS (
        SELECT s.id FROM steps s
        WHERE s.task_id = v_task
          AND s.name IN (SELECT jsonb_array_elements_text(spec->'children'))
    ), edges AS (
        INSERT INTO step_edges (task_id, parent_id, child_id)
        SELECT v_task, ins.id, kids.id FROM ins CROSS JOIN kids
    ), bump AS (
        UPDATE steps SET pending_parents = pending_parents + n, parent_count = parent_count + n
        WHERE id IN (SELECT id FROM kids)
    ), history AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT v_task, ins.id, 'pending', 'enqueued', 1, 'parents done' FROM ins WHERE enqueue
    )
    SELECT array_agg(id ORDER BY id) INTO ids FROM ins;
    UPDATE tasks SET open_steps = open_steps + n WHERE id = v_task;
    -- A large fan-out is counted down on tallies, one row per shard (migration 0036): its
    -- results, applied at once by several sessions, then do not all wait on the rows of the
    -- converging steps and of the task.
    IF n >= 1000 THEN
        INSERT INTO step_tallies (step_id, shard, task_id)
        SELECT s.id, g, v_task
        FROM steps s CROSS JOIN generate_series(0, 15) AS g
        WHERE s.task_id = v_task
          AND s.name IN (SELECT jsonb_array_elements_text(spec->'children'))
        ON CONFLICT DO NOTHING;
        INSERT INTO task_tallies (task_id, shard)
        SELECT v_task, g FROM generate_series(0, 15) AS g
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN ids;
END
$$;
