-- Applies a batch of results (a JSON array of tasker_shared::StepResult). `permits`, when
-- given, holds one entry per result, in the batch's order: NULL when its sender may serve any
-- namespace (the orchestrator itself, a trusted broker user), else a regular expression the
-- namespace of the result's step must match (a worker's broker user: the namespaces of its
-- token). Returns {accepted, ignored: [step ids], rejected: [{i, code, detail}],
-- dispatch: {messages, deferred} (tasker_dispatched), finished: [{task_id, state}],
-- retries: [{step_id, delay_ms}]}.
--
-- A result applies only if its task, step and attempt all match one step in flight (enqueued
-- with that attempt) and its sender may serve that step's namespace. A copy of a result
-- already applied (the same attempt again: a redelivery) is ignored. Anything else changes
-- nothing and is rejected with a code (`result_mismatch`: no such step, a step of another
-- task, an attempt the step is not at; `result_not_permitted`: a namespace the sender may not
-- serve) and `i`, its 1-based position in the batch: the caller dead-letters its message.
DROP FUNCTION IF EXISTS tasker_apply_results(jsonb);
CREATE OR REPLACE FUNCTION tasker_apply_results(batch jsonb, permits text[] DEFAULT NULL)
RETURNS jsonb LANGUAGE plpgsql
-- Every step is looked up by its id: index lookups whatever the statistics say (a 100,000-step
-- fan-out grows the tables faster than autovacuum re-analyzes them, and this session's plan
-- was made when they were small).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    r jsonb;
    outcome jsonb;
    st record;
    cd record;
    sk record;
    v_step uuid;
    v_attempt int;
    err jsonb;
    fx record;
    delay bigint;
    why text;
    resolved boolean;
    ready uuid[] := '{}';
    closed uuid[] := '{}';
    counted uuid[] := '{}';
    accepted int := 0;
    ignored uuid[] := '{}';
    rejected jsonb := '[]';
    finished jsonb := '[]';
    retries jsonb := '[]';
    -- On the general path, plain successes (a standard, convergence or batch-worker step's)
    -- are held here and written together by one UPDATE and one INSERT (see `flush` below)
    -- instead of one of each a result: every statement costs PostgreSQL an executor start
    -- and, for a table it writes, its constraints again.
    held_ids uuid[] := '{}';
    held_tasks uuid[] := '{}';
    held_attempts int[] := '{}';
    held jsonb[] := '{}';
    -- The steps the batch names, locked, in lock order (their results alike).
    locked_ids uuid[];
    locked_tasks uuid[];
    locked_attempts int[];
    locked_results jsonb[];
    plain boolean;
    ok record;
    sent jsonb;
    sent_too jsonb;
BEGIN
    -- Every step the batch names is locked first, in one statement, in the one global order
    -- (task, step, attempt) so concurrent orchestrators never deadlock, and each result is
    -- judged against its step there: accepted (in flight with that attempt, of that task, in a
    -- namespace its sender may serve), ignored (a copy of an accepted result, or of the result
    -- that settled the attempt the step is at) or rejected with a code and why. Copies are told
    -- apart after judging, so a rejected result never takes the place of an acceptable one.
    WITH judged AS (
        SELECT x.*, s.id AS sid, s.task_id AS stask, s.step_type,
               CASE
                   WHEN s.id IS NULL THEN 'result_mismatch'
                   WHEN s.task_id <> x.task THEN 'result_mismatch'
                   WHEN x.permit IS NOT NULL
                        AND NOT EXISTS (SELECT FROM tasks t
                                        WHERE t.id = s.task_id AND t.namespace ~ x.permit)
                       THEN 'result_not_permitted'
                   WHEN x.attempt = s.attempt AND s.state = 'enqueued' THEN 'apply'
                   -- The attempt the step is at, settled already: a copy of its result.
                   WHEN x.attempt = s.attempt THEN 'ignore'
                   ELSE 'result_mismatch'
               END AS verdict,
               CASE
                   WHEN s.id IS NULL THEN format('no step %s', x.step)
                   WHEN s.task_id <> x.task
                       THEN format('step %s is not a step of task %s', x.step, x.task)
                   ELSE format('attempt %s of step %s is not in flight (the step is at attempt %s, %s)',
                               x.attempt, x.step, s.attempt, s.state)
               END AS detail
        FROM (SELECT e.value AS r, e.i, (e.value->>'step_id')::uuid AS step,
                     (e.value->>'task_id')::uuid AS task, (e.value->>'attempt')::int AS attempt,
                     permits[e.i] AS permit,
                     row_number() OVER (ORDER BY e.value->>'task_id', e.value->>'step_id',
                                                 (e.value->>'attempt')::int, e.i) AS k
              FROM jsonb_array_elements(batch) WITH ORDINALITY AS e(value, i)
              ORDER BY k OFFSET 0) x
        -- By primary key only (OFFSET 0 keeps the other tests out of the lookup): a plan made
        -- while the table was small otherwise went through the index of enqueued steps, reading
        -- all 100,000 of a fan-out's for each result.
        LEFT JOIN LATERAL (SELECT id, task_id, step_type, attempt, state FROM steps
                           WHERE id = x.step OFFSET 0 FOR UPDATE) s ON true
    ), v AS (
        -- The second copy of an accepted result is ignored: the first settles its attempt.
        SELECT j.*,
               CASE WHEN j.verdict = 'apply'
                         AND row_number() OVER (PARTITION BY j.step, j.attempt, j.verdict = 'apply'
                                                ORDER BY j.i) > 1
                    THEN 'ignore' ELSE j.verdict END AS final
        FROM judged j
    )
    SELECT COALESCE(array_agg(v.sid ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.stask ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.attempt ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.r ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.step ORDER BY v.k) FILTER (WHERE v.final = 'ignore'), '{}'),
           COALESCE(jsonb_agg(jsonb_build_object('i', v.i, 'code', v.final, 'detail', v.detail)
                              ORDER BY v.i)
                        FILTER (WHERE v.final NOT IN ('apply', 'ignore')), '[]'),
           COALESCE(bool_and(v.r->'outcome'->>'status' = 'success'
                             AND v.step_type NOT IN ('decision', 'batchable'))
                        FILTER (WHERE v.final = 'apply'), true)
    INTO locked_ids, locked_tasks, locked_attempts, locked_results, ignored, rejected, plain
    FROM v;

    -- Almost every batch is plain successes only: those go in one statement.
    IF plain THEN
        accepted := cardinality(locked_ids);
        IF accepted = 0 THEN
            RETURN jsonb_build_object('accepted', 0, 'ignored', to_jsonb(ignored),
                                      'rejected', rejected,
                                      'dispatch', tasker_dispatched('{}'), 'finished', finished,
                                      'retries', retries);
        END IF;
        SELECT * INTO ok
        FROM tasker_apply_successes(locked_ids, locked_tasks, locked_attempts, locked_results);
        finished := ok.finished;
        IF cardinality(ok.skip) = 0 THEN
            RETURN jsonb_build_object('accepted', accepted, 'ignored', to_jsonb(ignored),
                                      'rejected', rejected,
                                      'dispatch', tasker_dispatched(ok.enqueued),
                                      'finished', finished, 'retries', retries);
        END IF;
        -- Children that can no longer run (a parent was skipped before): skipped, and so on
        -- down the DAG, as the general path does.
        SELECT * INTO sk FROM tasker_skip(ok.skip);
        finished := finished || tasker_close_steps(sk.closed);
        sent := tasker_dispatched(ok.enqueued);
        sent_too := tasker_dispatch(sk.ready);
        RETURN jsonb_build_object('accepted', accepted, 'ignored', to_jsonb(ignored),
                                  'rejected', rejected,
                                  'dispatch', jsonb_build_object(
                                      'messages', (sent->'messages') || (sent_too->'messages'),
                                      'deferred', (sent->'deferred') || (sent_too->'deferred')),
                                  'finished', finished, 'retries', retries);
    END IF;

    -- The general path: each accepted result in lock order (its step is locked already).
    FOR r IN SELECT u.r FROM unnest(locked_results) AS u(r)
    LOOP
        v_step := (r->>'step_id')::uuid;
        v_attempt := (r->>'attempt')::int;
        SELECT id, task_id, name, step_type, branches, batch_spec, on_failure, max_attempts,
               attempt_base, backoff, base_ms, max_ms
        INTO st FROM steps
        WHERE id = v_step AND attempt = v_attempt AND state = 'enqueued';
        IF NOT FOUND THEN
            -- An earlier result of this batch closed it (a failure that ended its task).
            ignored := ignored || v_step;
            CONTINUE;
        END IF;
        accepted := accepted + 1;
        outcome := r->'outcome';
        IF outcome->>'status' = 'success' AND st.step_type NOT IN ('decision', 'batchable') THEN
            held_ids := held_ids || v_step;
            held_tasks := held_tasks || st.task_id;
            held_attempts := held_attempts || v_attempt;
            held := held || r;
            closed := closed || st.task_id;
            counted := counted || v_step;
            CONTINUE;
        END IF;
        -- Anything else may end the task or change its other steps: what is held is written
        -- first, so every result takes effect in order, as if each were written at once.
        IF array_length(held_ids, 1) > 0 THEN
            PERFORM tasker_complete_steps(held_ids, held_tasks, held_attempts, held);
            held_ids := '{}'; held_tasks := '{}'; held_attempts := '{}'; held := '{}';
        END IF;
        -- A decision or batchable handler that ran but answered something unusable fails its
        -- step for good.
        IF outcome->>'status' = 'success' THEN
            err := tasker_result_problem(st.step_type, st.branches, outcome->'result');
            IF err IS NOT NULL THEN
                outcome := jsonb_build_object('status', 'failure', 'retryable', false, 'error', err);
            END IF;
        END IF;

        err := outcome->'error';
        resolved := false;
        IF outcome->>'status' = 'success' THEN
            UPDATE steps SET state = 'completed', result = outcome->'result',
                             started_at = (r->>'started_at')::timestamptz,
                             finished_at = (r->>'finished_at')::timestamptz,
                             worker = r->>'worker', processed_at = clock_timestamp()
            WHERE id = v_step;
            INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
            VALUES (st.task_id, v_step, 'enqueued', 'completed', v_attempt, 'succeeded');
            SELECT * INTO fx FROM tasker_step_succeeded(st.task_id, st.step_type, st.branches,
                                                        st.batch_spec, outcome->'result');
            ready := ready || fx.ready;
            closed := closed || fx.closed;
            resolved := true;
        -- Attempts are counted from the step's last repair (attempt_base).
        ELSIF (outcome->>'retryable')::boolean AND v_attempt - st.attempt_base < st.max_attempts THEN
            -- The handler's own delay (a rate limit's Retry-After), at most a day, else the
            -- step's backoff.
            -- (LEAST ignores NULL, so the handler's value is tested first.)
            delay := CASE WHEN outcome->>'retry_after_ms' IS NOT NULL
                          THEN LEAST((outcome->>'retry_after_ms')::numeric, 86400000)::bigint
                          ELSE tasker_retry_delay_ms(st.backoff, st.base_ms, st.max_ms,
                                                     v_attempt - st.attempt_base) END;
            UPDATE steps SET state = 'waiting_retry', error = err,
                             started_at = (r->>'started_at')::timestamptz,
                             finished_at = (r->>'finished_at')::timestamptz,
                             worker = r->>'worker', processed_at = clock_timestamp(),
                             next_attempt_at = clock_timestamp() + delay * interval '1 millisecond'
            WHERE id = v_step;
            INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
            VALUES (st.task_id, v_step, 'enqueued', 'waiting_retry', v_attempt,
                    format('%s: %s', err->>'kind', err->>'message'));
            IF delay = 0 THEN
                ready := ready || v_step;
            ELSE
                retries := retries || jsonb_build_object('step_id', v_step, 'delay_ms', delay);
            END IF;
        ELSE
            why := CASE WHEN (outcome->>'retryable')::boolean
                        THEN format('attempts exhausted (%s): %s', v_attempt, err->>'message')
                        ELSE format('permanent failure: %s', err->>'message') END;
            UPDATE steps SET state = 'failed', error = err,
                             started_at = (r->>'started_at')::timestamptz,
                             finished_at = (r->>'finished_at')::timestamptz,
                             worker = r->>'worker', processed_at = clock_timestamp()
            WHERE id = v_step;
            INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
            VALUES (st.task_id, v_step, 'enqueued', 'failed', v_attempt, why);
            IF st.on_failure = 'continue' THEN
                -- A failed batch under `continue`: recorded, and its children go on.
                resolved := true;
            ELSIF tasker_end_task(st.task_id, 'error',
                                  jsonb_build_object('step', st.name, 'attempt', v_attempt, 'error', err),
                                  why) THEN
                finished := finished || jsonb_build_object('task_id', st.task_id, 'state', 'error');
            END IF;
        END IF;

        IF resolved THEN
            closed := closed || st.task_id;
            counted := counted || v_step;
        END IF;
    END LOOP;
    IF array_length(held_ids, 1) > 0 THEN
        PERFORM tasker_complete_steps(held_ids, held_tasks, held_attempts, held);
    END IF;

    -- Count every resolved step off its children at once (one update per child per batch).
    SELECT * INTO cd FROM tasker_count_down_all(counted, false);
    ready := ready || cd.ready;
    IF array_length(cd.skip, 1) > 0 THEN
        SELECT * INTO sk FROM tasker_skip(cd.skip);
        ready := ready || sk.ready;
        closed := closed || sk.closed;
    END IF;

    -- Close finished steps; tasks whose last open step closed complete.
    finished := finished || tasker_close_steps(closed);

    RETURN jsonb_build_object('accepted', accepted, 'ignored', to_jsonb(ignored),
                              'rejected', rejected,
                              'dispatch', tasker_dispatch(ready), 'finished', finished,
                              'retries', retries);
END
$$;
