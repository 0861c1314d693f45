-- The check after a commit that counted results on tallies (migration 0036), for tasks
-- `v_tasks`: a converging step whose tallies may hold its last parents, and a running task whose
-- tallies may hold its last open steps, are folded (tasker_fold_tallies, under their locks and
-- every shard's) and then resolved as a count-down on the row would have: the step runs, or is
-- skipped if it can no longer run; the task completes. The first look takes no lock, so a batch
-- that did not count the last ones costs one read. Whichever of the sessions that counted the
-- last ones commits last sees them all here; a step or task resolved by another is no longer
-- pending or running, so it is resolved once. The sweeper calls it too, for tallies a stopped
-- orchestrator counted on and did not check. Answers as tasker_apply_results (tasker_applied).
CREATE OR REPLACE FUNCTION tasker_settle(v_tasks uuid[]) RETURNS jsonb LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    due uuid[];
    ready uuid[] := '{}';
    skip uuid[] := '{}';
    closed uuid[] := '{}';
    sk record;
    finished jsonb;
BEGIN
    SELECT array_agg(s.id ORDER BY s.id) INTO due
    FROM (SELECT step_id, sum(n) AS n FROM step_tallies WHERE task_id = ANY (v_tasks)
          GROUP BY step_id) t
    JOIN LATERAL (SELECT id, state, pending_parents FROM steps WHERE id = t.step_id OFFSET 0) s
         ON true
    WHERE t.n > 0 AND s.state = 'pending' AND s.pending_parents <= t.n;
    IF due IS NOT NULL THEN
        PERFORM tasker_fold_tallies(due, '{}');
        SELECT COALESCE(array_agg(id) FILTER (WHERE tasker_runnable(step_type, skipped_parents,
                                                                    parent_count)), '{}'),
               COALESCE(array_agg(id) FILTER (WHERE NOT tasker_runnable(step_type,
                                                                        skipped_parents,
                                                                        parent_count)), '{}')
        INTO ready, skip
        FROM steps WHERE id = ANY (due) AND state = 'pending' AND pending_parents <= 0;
        IF cardinality(skip) > 0 THEN
            SELECT * INTO sk FROM tasker_skip(skip);
            ready := ready || sk.ready;
            closed := sk.closed;
        END IF;
    END IF;
    SELECT array_agg(k.id ORDER BY k.id) INTO due
    FROM (SELECT task_id, sum(n) AS n FROM task_tallies WHERE task_id = ANY (v_tasks)
          GROUP BY task_id) t
    JOIN LATERAL (SELECT id, state, open_steps FROM tasks WHERE id = t.task_id OFFSET 0) k ON true
    WHERE t.n > 0 AND k.state = 'running' AND k.open_steps <= t.n;
    finished := tasker_close_steps(closed)
                || tasker_close_counted(COALESCE(due, '{}'),
                                        array_fill(0, ARRAY[COALESCE(cardinality(due), 0)]));
    RETURN tasker_applied(0, '{}', '[]', '{}', ready, finished, '[]');
END
$$;
