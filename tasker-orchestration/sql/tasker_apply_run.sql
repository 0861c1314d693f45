-- A run of plain successes in a batch that is not all plain successes (see
-- tasker_apply_results): those whose steps are still in flight succeed together
-- (tasker_succeed_steps); the others' steps were closed by an earlier result of the batch (a
-- failure that ended their task), and are returned in `gone`.
-- `ready`: children with limits to claim (tasker_dispatch) before they are enqueued.
CREATE OR REPLACE FUNCTION tasker_apply_run(ids uuid[], task_ids uuid[], attempts int[],
                                            results jsonb[], OUT accepted int, OUT gone uuid[],
                                            OUT enqueued uuid[], OUT skip uuid[],
                                            OUT finished jsonb, OUT ready uuid[])
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    live record;
    ok record;
BEGIN
    SELECT COALESCE(array_agg(x.id ORDER BY x.o) FILTER (WHERE s.id IS NOT NULL), '{}') AS ids,
           COALESCE(array_agg(x.task ORDER BY x.o) FILTER (WHERE s.id IS NOT NULL), '{}') AS tasks,
           COALESCE(array_agg(x.attempt ORDER BY x.o) FILTER (WHERE s.id IS NOT NULL), '{}') AS attempts,
           COALESCE(array_agg(x.r ORDER BY x.o) FILTER (WHERE s.id IS NOT NULL), '{}') AS results,
           COALESCE(array_agg(x.id ORDER BY x.o) FILTER (WHERE s.id IS NULL), '{}') AS gone
    INTO live
    FROM unnest(ids, task_ids, attempts, results) WITH ORDINALITY AS x(id, task, attempt, r, o)
    LEFT JOIN LATERAL (SELECT id FROM steps
                       WHERE id = x.id AND attempt = x.attempt AND state = 'enqueued'
                       OFFSET 0) s ON true;
    accepted := cardinality(live.ids);
    gone := live.gone;
    enqueued := '{}';
    skip := '{}';
    finished := '[]';
    ready := '{}';
    IF accepted > 0 THEN
        SELECT * INTO ok FROM tasker_succeed_steps(live.ids, live.tasks, live.attempts, live.results);
        enqueued := ok.enqueued;
        skip := ok.skip;
        finished := ok.finished;
        ready := ok.limited;
    END IF;
END
$$;
