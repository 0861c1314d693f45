-- Marks steps completed with their results, and records each transition: the plain successes
-- of a result batch (see tasker_apply_results), written by one statement each instead of two
-- statements a step. The steps are locked already (in the batch's order) and known to be
-- enqueued with the attempt reported; `results` are the StepResult objects, in step order.
CREATE OR REPLACE FUNCTION tasker_complete_steps(ids uuid[], task_ids uuid[], attempts int[],
                                                 results jsonb[])
RETURNS void LANGUAGE plpgsql
-- By primary key, one step at a time, however small the table looked when the plan was made.
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    UPDATE steps s SET state = 'completed', result = x.r->'outcome'->'result',
                       started_at = (x.r->>'started_at')::timestamptz,
                       finished_at = (x.r->>'finished_at')::timestamptz,
                       worker = x.r->>'worker', processed_at = clock_timestamp()
    FROM unnest(ids, results) AS x(id, r)
    WHERE s.id = x.id;
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    SELECT x.task_id, x.id, 'enqueued', 'completed', x.attempt, 'succeeded'
    FROM unnest(task_ids, ids, attempts) AS x(task_id, id, attempt);
END
$$;
