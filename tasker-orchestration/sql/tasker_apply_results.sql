-- Applies a batch of results (a JSON array of tasker_shared::StepResult) in one transaction;
-- `permits` says what each result's sender may move (see tasker_judge_results). Returns
-- {accepted, ignored: [step ids], rejected: [{i, code, detail}], dispatch: {messages, deferred}
-- (tasker_dispatched), finished: [{task_id, state}], retries: [{step_id, delay_ms}]}.
--
-- Each result is judged and its step locked first (tasker_judge_results). A batch of plain
-- successes only, which almost every batch is, is then applied by tasker_apply_successes. Any
-- other batch takes effect result by result in lock order, as if each were applied alone: a run
-- of plain successes together (tasker_succeed_steps, as tasker_apply_successes does), any other
-- result by the function of its kind — a decision's or a batchable step's success
-- (tasker_apply_shaped), a retryable failure with attempts left (tasker_apply_retry), a failure
-- for good (tasker_apply_failure) — once it is clear that an earlier result of the batch did not
-- close its step (a failure that ended its task). What can no longer run is then skipped, the
-- steps resolved along the way are counted off their tasks, and what is ready is dispatched.
CREATE OR REPLACE FUNCTION tasker_apply_results(batch jsonb, permits text[] DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    j record;
    fx record;
    st steps;
    k int := 1;
    e int;
    n int;
    accepted int := 0;
    ignored uuid[];
    enqueued uuid[] := '{}';
    ready uuid[] := '{}';
    skip uuid[] := '{}';
    closed uuid[] := '{}';
    finished jsonb := '[]';
    retries jsonb := '[]';
BEGIN
    SELECT * INTO j FROM tasker_judge_results(batch, permits);
    ignored := j.ignored;
    n := cardinality(j.ids);
    IF j.plain THEN
        SELECT * INTO fx FROM tasker_apply_successes(j.ids, j.task_ids, j.attempts, j.results);
        RETURN tasker_applied(n, ignored, j.rejected, fx.enqueued, fx.ready, fx.finished, retries);
    END IF;
    WHILE k <= n LOOP
        IF j.kinds[k] = 'success' THEN
            e := k;
            WHILE e < n AND j.kinds[e + 1] = 'success' LOOP
                e := e + 1;
            END LOOP;
            SELECT * INTO fx FROM tasker_apply_run(j.ids[k:e], j.task_ids[k:e], j.attempts[k:e],
                                                   j.results[k:e]);
            accepted := accepted + fx.accepted;
            ignored := ignored || fx.gone;
            enqueued := enqueued || fx.enqueued;
            ready := ready || fx.ready;
            skip := skip || fx.skip;
            finished := finished || fx.finished;
            k := e + 1;
            CONTINUE;
        END IF;
        SELECT * INTO st FROM steps
        WHERE id = j.ids[k] AND attempt = j.attempts[k] AND state = 'enqueued';
        IF NOT FOUND THEN
            ignored := ignored || j.ids[k];
        ELSIF j.kinds[k] IN ('decision', 'batchable') THEN
            accepted := accepted + 1;
            SELECT * INTO fx FROM tasker_apply_shaped(st, j.results[k]);
            enqueued := enqueued || fx.enqueued;
            ready := ready || fx.ready;
            skip := skip || fx.skip;
            closed := closed || fx.closed;
            finished := finished || fx.finished;
        -- Attempts are counted from the step's last repair (attempt_base).
        ELSIF (j.results[k]->'outcome'->>'retryable')::boolean
              AND st.attempt - st.attempt_base < st.max_attempts THEN
            accepted := accepted + 1;
            SELECT * INTO fx FROM tasker_apply_retry(st, j.results[k]);
            ready := ready || fx.ready;
            IF fx.retry IS NOT NULL THEN
                retries := retries || jsonb_build_array(fx.retry);
            END IF;
        ELSE
            accepted := accepted + 1;
            SELECT * INTO fx FROM tasker_apply_failure(st, j.results[k]);
            ready := ready || fx.ready;
            skip := skip || fx.skip;
            closed := closed || fx.closed;
            finished := finished || fx.finished;
        END IF;
        k := k + 1;
    END LOOP;
    IF cardinality(skip) > 0 THEN
        SELECT * INTO fx FROM tasker_skip(skip);
        ready := ready || fx.ready;
        closed := closed || fx.closed;
    END IF;
    finished := finished || tasker_close_steps(closed);
    -- A step enqueued by a success and cancelled by a later failure of its task is not sent.
    SELECT COALESCE(array_agg(s.id ORDER BY s.id), '{}') INTO enqueued
    FROM unnest(enqueued) AS q(id) CROSS JOIN LATERAL (SELECT id, state FROM steps WHERE id = q.id OFFSET 0) s
    WHERE s.state = 'enqueued';
    RETURN tasker_applied(accepted, ignored, j.rejected, enqueued, ready, finished, retries);
END
$$;
