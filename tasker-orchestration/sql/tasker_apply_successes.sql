-- A batch whose accepted results are all plain successes, which is what almost every result
-- batch is: the successes (tasker_succeed_steps, one statement), then the children that can no
-- longer run skipped, and so on down the DAG, and their tasks closed. What the general path of
-- tasker_apply_results does for such a batch, with nothing in between.
CREATE OR REPLACE FUNCTION tasker_apply_successes(ids uuid[], task_ids uuid[], attempts int[],
                                                  results jsonb[], OUT enqueued uuid[],
                                                  OUT ready uuid[], OUT finished jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    ok record;
    sk record;
BEGIN
    SELECT * INTO ok FROM tasker_succeed_steps(ids, task_ids, attempts, results);
    enqueued := ok.enqueued;
    finished := ok.finished;
    ready := ok.limited;
    IF cardinality(ok.skip) > 0 THEN
        SELECT * INTO sk FROM tasker_skip(ok.skip);
        ready := ready || sk.ready;
        finished := finished || tasker_close_steps(sk.closed);
    END IF;
END
$$;
