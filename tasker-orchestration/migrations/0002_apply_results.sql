-- The result path in one round trip. `tasker_apply_results(batch)` applies a whole batch of step
-- results inside the statement's own transaction: the orchestrator sends one statement per batch
-- and gets back the steps to publish, the finished tasks, the ignored results and the retries to
-- schedule. Before this, the same logic ran as eight client round trips per result.
--
-- Every state change stays a guarded update (state and attempt checked under a row lock), and
-- every transition is recorded in `transitions`.

-- Delay before the next attempt after `failed_attempt` failed (milliseconds). Mirrors
-- tasker_shared::RetryPolicy::delay_after; a test checks that the two agree.
CREATE FUNCTION tasker_retry_delay_ms(backoff text, base_ms bigint, max_ms bigint, failed_attempt int)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT LEAST(
        CASE backoff
            WHEN 'none' THEN 0::numeric
            WHEN 'linear' THEN base_ms::numeric * GREATEST(failed_attempt, 1)
            ELSE base_ms::numeric * power(2::numeric, LEAST(GREATEST(failed_attempt, 1) - 1, 62))
        END,
        max_ms::numeric)::bigint
$$;

-- Whether a step whose parents are all resolved runs (true) or is skipped (false).
CREATE FUNCTION tasker_runnable(step_type text, skipped_parents int, parent_count int)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN step_type = 'convergence' THEN skipped_parents < parent_count
                ELSE skipped_parents = 0 END
$$;

-- A UUID v7 (time-ordered, like the ids Rust generates): a random v4 whose first 48 bits become
-- the Unix time in milliseconds and whose version nibble becomes 7.
CREATE FUNCTION tasker_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;

-- Self-contained step messages (the JSON form of tasker_shared::StepMessage) for enqueued steps.
CREATE FUNCTION tasker_step_messages(ids uuid[]) RETURNS jsonb LANGUAGE sql STABLE AS $$
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
        'dispatched_at', s.dispatched_at, 'timeout_ms', s.timeout_ms) ORDER BY s.id), '[]'::jsonb)
    FROM steps s JOIN tasks t ON t.id = s.task_id
    WHERE s.id = ANY(ids) AND s.state = 'enqueued'
$$;

-- Moves pending / waiting_retry steps to enqueued (next attempt) and returns their messages.
CREATE FUNCTION tasker_dispatch(ids uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    enqueued uuid[];
BEGIN
    IF COALESCE(array_length(ids, 1), 0) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    WITH old AS (
        SELECT id, state FROM steps
        WHERE id = ANY(ids) AND state IN ('pending', 'waiting_retry')
        ORDER BY id FOR UPDATE
    ), upd AS (
        UPDATE steps s SET state = 'enqueued', attempt = s.attempt + 1, publish_count = 1,
                           dispatched_at = clock_timestamp(), next_attempt_at = NULL
        FROM old WHERE s.id = old.id
        RETURNING s.id, s.task_id, s.attempt, old.state AS from_state
    ), hist AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT task_id, id, from_state, 'enqueued', attempt,
               CASE from_state WHEN 'pending' THEN 'parents done' ELSE 'retry' END
        FROM upd
    )
    SELECT array_agg(id) INTO enqueued FROM upd;
    RETURN tasker_step_messages(enqueued);
END
$$;

-- Ends a running task (error or cancel): the task and every open step become terminal.
-- Returns false if the task was not running.
CREATE FUNCTION tasker_end_task(v_task uuid, to_state text, err jsonb, why text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tasks SET state = to_state, error = err, completed_at = clock_timestamp()
    WHERE id = v_task AND state = 'running';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    WITH old AS (
        SELECT id, state FROM steps
        WHERE task_id = v_task AND state IN ('pending', 'enqueued', 'waiting_retry')
        ORDER BY id FOR UPDATE
    ), upd AS (
        UPDATE steps s SET state = 'cancelled' FROM old WHERE s.id = old.id
        RETURNING s.id, s.attempt, old.state AS from_state
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    SELECT v_task, id, from_state, 'cancelled', attempt, why FROM upd;
    INSERT INTO transitions (task_id, from_state, to_state, reason)
    VALUES (v_task, 'running', to_state, why);
    PERFORM pg_notify('tasker_task_finished', v_task || ':' || to_state);
    RETURN true;
END
$$;

-- Counts a resolved parent off its children: returns the children that became runnable and
-- those that can no longer run (to skip).
CREATE FUNCTION tasker_count_down(v_parent uuid, parent_skipped boolean,
                                  OUT ready uuid[], OUT skip uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    kid record;
BEGIN
    ready := '{}';
    skip := '{}';
    FOR kid IN
        UPDATE steps s SET pending_parents = s.pending_parents - 1,
                           skipped_parents = s.skipped_parents + parent_skipped::int
        FROM step_edges e WHERE e.parent_id = v_parent AND s.id = e.child_id
        RETURNING s.id, s.state, s.step_type, s.pending_parents, s.skipped_parents, s.parent_count
    LOOP
        CONTINUE WHEN kid.state <> 'pending' OR kid.pending_parents > 0;
        IF tasker_runnable(kid.step_type, kid.skipped_parents, kid.parent_count) THEN
            ready := ready || kid.id;
        ELSE
            skip := skip || kid.id;
        END IF;
    END LOOP;
END
$$;

-- Skips the queued pending steps and propagates to children that can no longer run.
-- Returns the children that became runnable and, per skipped step, its task (to close it).
CREATE FUNCTION tasker_skip(queue uuid[], OUT ready uuid[], OUT closed uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
    v_task uuid;
    cd record;
BEGIN
    ready := '{}';
    closed := '{}';
    WHILE COALESCE(array_length(queue, 1), 0) > 0 LOOP
        v_id := queue[1];
        queue := queue[2:];
        UPDATE steps SET state = 'skipped', processed_at = clock_timestamp()
        WHERE id = v_id AND state = 'pending'
        RETURNING task_id INTO v_task;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        VALUES (v_task, v_id, 'pending', 'skipped', 0, 'branch not chosen');
        closed := closed || v_task;
        SELECT * INTO cd FROM tasker_count_down(v_id, true);
        ready := ready || cd.ready;
        queue := queue || cd.skip;
    END LOOP;
END
$$;

-- Creates one instance of a batchable step's batch_worker per batch, all pending with nothing
-- to wait for, wired to the worker's children, whose counters grow by the number of batches.
-- Returns the new step ids (to dispatch).
CREATE FUNCTION tasker_expand_batches(v_task uuid, spec jsonb, batches jsonb) RETURNS uuid[]
LANGUAGE plpgsql AS $$
DECLARE
    n int := jsonb_array_length(batches);
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
                           backoff, base_ms, max_ms, timeout_ms, parent_count, pending_parents,
                           input, on_failure)
        SELECT b.id, v_task, (spec->>'name') || '#' || b.i, spec->>'handler', 'batch_worker',
               'pending', 0, (spec->>'max_attempts')::int, spec->>'backoff',
               (spec->>'base_ms')::bigint, (spec->>'max_ms')::bigint, (spec->>'timeout_ms')::bigint,
               0, 0, b.input, spec->>'on_failure'
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
    )
    SELECT array_agg(id) INTO ids FROM ins;
    UPDATE tasks SET open_steps = open_steps + n WHERE id = v_task;
    RETURN ids;
END
$$;

-- Applies a batch of results (a JSON array of tasker_shared::StepResult). Returns
-- {accepted, ignored: [step ids], dispatch: [StepMessage], finished: [{task_id, state}],
--  retries: [{step_id, delay_ms}]}.
CREATE FUNCTION tasker_apply_results(batch jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    outcome jsonb;
    st record;
    cd record;
    sk record;
    v_step uuid;
    v_attempt int;
    chosen jsonb;
    not_chosen uuid[];
    err jsonb;
    delay bigint;
    why text;
    resolved boolean;
    ready uuid[] := '{}';
    closed uuid[] := '{}';
    accepted int := 0;
    ignored uuid[] := '{}';
    finished jsonb := '[]';
    retries jsonb := '[]';
    t record;
    v_open int;
    v_state text;
BEGIN
    -- Rows are locked in one global order so concurrent orchestrators never deadlock.
    FOR r IN SELECT e.value FROM jsonb_array_elements(batch) AS e
             ORDER BY e.value->>'task_id', e.value->>'step_id', (e.value->>'attempt')::int
    LOOP
        v_step := (r->>'step_id')::uuid;
        v_attempt := (r->>'attempt')::int;
        SELECT id, task_id, name, step_type, branches, batch_spec, on_failure, max_attempts,
               backoff, base_ms, max_ms
        INTO st FROM steps
        WHERE id = v_step AND attempt = v_attempt AND state = 'enqueued'
        FOR UPDATE;
        IF NOT FOUND THEN
            -- Duplicate or stale: the step is not in flight with this attempt.
            ignored := ignored || v_step;
            CONTINUE;
        END IF;
        accepted := accepted + 1;
        outcome := r->'outcome';
        -- A decision or batchable handler that ran but answered something unusable fails its
        -- step for good.
        IF outcome->>'status' = 'success' AND st.step_type = 'decision' THEN
            chosen := outcome->'result'->'branches';
            IF jsonb_typeof(chosen) IS DISTINCT FROM 'array'
               OR EXISTS (SELECT 1 FROM jsonb_array_elements(chosen) c
                          WHERE jsonb_typeof(c) <> 'string' OR NOT (st.branches ? (c #>> '{}')))
            THEN
                outcome := jsonb_build_object('status', 'failure', 'retryable', false,
                    'error', jsonb_build_object('kind', 'invalid_decision',
                        'message', format('a decision step must return {"branches": [...]} naming some of %s; got %s',
                                          st.branches, COALESCE(chosen::text, 'no branches'))));
            END IF;
        ELSIF outcome->>'status' = 'success' AND st.step_type = 'batchable'
              AND jsonb_typeof(outcome->'result'->'batches') IS DISTINCT FROM 'array' THEN
            outcome := jsonb_build_object('status', 'failure', 'retryable', false,
                'error', jsonb_build_object('kind', 'invalid_batches',
                    'message', 'a batchable step must return {"batches": [...]}, one entry per batch'));
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
            IF st.step_type = 'decision' THEN
                -- Skip the branches not chosen before the children are counted down, so they
                -- are no longer pending then.
                SELECT array_agg(s.id) INTO not_chosen
                FROM jsonb_array_elements_text(st.branches) AS b(name)
                JOIN steps s ON s.task_id = st.task_id AND s.name = b.name
                WHERE NOT (chosen ? b.name);
                SELECT * INTO sk FROM tasker_skip(COALESCE(not_chosen, '{}'));
                ready := ready || sk.ready;
                closed := closed || sk.closed;
            ELSIF st.step_type = 'batchable' THEN
                -- Create the batches before counting down, so the children wait for them.
                ready := ready || tasker_expand_batches(st.task_id, st.batch_spec,
                                                        outcome->'result'->'batches');
            END IF;
            resolved := true;
        ELSIF (outcome->>'retryable')::boolean AND v_attempt < st.max_attempts THEN
            delay := tasker_retry_delay_ms(st.backoff, st.base_ms, st.max_ms, v_attempt);
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
            SELECT * INTO cd FROM tasker_count_down(v_step, false);
            ready := ready || cd.ready;
            IF array_length(cd.skip, 1) > 0 THEN
                SELECT * INTO sk FROM tasker_skip(cd.skip);
                ready := ready || sk.ready;
                closed := closed || sk.closed;
            END IF;
        END IF;
    END LOOP;

    -- Close finished steps: one counter update per task, in id order.
    FOR t IN SELECT c.task_id, count(*)::int AS n FROM unnest(closed) AS c(task_id)
             GROUP BY c.task_id ORDER BY c.task_id
    LOOP
        UPDATE tasks SET open_steps = open_steps - t.n,
            state = CASE WHEN open_steps - t.n <= 0 AND state = 'running' THEN 'complete' ELSE state END,
            completed_at = CASE WHEN open_steps - t.n <= 0 AND state = 'running'
                                THEN clock_timestamp() ELSE completed_at END
        WHERE id = t.task_id
        RETURNING open_steps, state INTO v_open, v_state;
        IF v_open <= 0 AND v_state = 'complete' AND v_open + t.n > 0 THEN
            INSERT INTO transitions (task_id, from_state, to_state, reason)
            VALUES (t.task_id, 'running', 'complete', 'all steps done');
            PERFORM pg_notify('tasker_task_finished', t.task_id || ':complete');
            finished := finished || jsonb_build_object('task_id', t.task_id, 'state', 'complete');
        END IF;
    END LOOP;

    RETURN jsonb_build_object('accepted', accepted, 'ignored', to_jsonb(ignored),
                              'dispatch', tasker_dispatch(ready), 'finished', finished,
                              'retries', retries);
END
$$;
