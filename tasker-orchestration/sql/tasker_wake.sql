-- Resolves wait steps whose time has come (at most `lim`, oldest first; rows another
-- orchestrator holds are skipped, so any number can run this at once):
--   sleep, or until → completed with {"woke_at": …};
--   signal arrived → the oldest unconsumed signal of that name is consumed by this step (one
--     signal, one step) and the step completes with its payload;
--   signal timed out → `on_timeout`: fail (a permanent failure `wait_timed_out`), continue
--     (completed with {"timed_out": true}) or skip (the step is skipped, and with it what
--     depends on it alone, like a decision's unchosen branch);
--   until unreadable or more than a year ahead → a permanent failure `wait_until_invalid`;
--   a child step whose child task ended (tasker_task_ended woke it) → completed with the child's
--     result (tasker_task_result), or a permanent failure `child_failed` / `child_cancelled`
--     naming the child (a retry of the step starts a new child).
-- Completions and failures are applied as results (tasker_apply_results), so what follows is
-- exactly what a worker's result would do. Returns {applied: <tasker_apply_results answer>,
-- skipped: <tasker_applied answer>, woken: n}.
CREATE OR REPLACE FUNCTION tasker_wake(lim int)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    w record;
    now_ timestamptz := clock_timestamp();
    batch jsonb := '[]';
    skipped uuid[] := '{}';
    skipped_tasks uuid[] := '{}';
    until_at timestamptz;
    payload jsonb;
    outcome jsonb;
    cd record;
    ch record;
    sk record;
    applied jsonb;
    finished jsonb;
    n int := 0;
BEGIN
    FOR w IN
        SELECT s.id, s.task_id, s.attempt, s.wait, s.wake_at, s.dispatched_at, s.child_task_id,
               CASE WHEN s.step_type = 'child' THEN 'child' ELSE s.wait->>'kind' END AS kind
        FROM steps s
        WHERE s.state = 'enqueued' AND s.wake_at IS NOT NULL AND s.wake_at <= now_
        ORDER BY s.wake_at LIMIT lim
        FOR UPDATE OF s SKIP LOCKED
    LOOP
        outcome := NULL;
        CASE w.kind
            WHEN 'child' THEN
                SELECT id, state, error, namespace, name, version INTO ch
                FROM tasks WHERE id = w.child_task_id;
                IF ch.state = 'complete' THEN
                    outcome := jsonb_build_object('status', 'success',
                                                  'result', tasker_task_result(ch.id));
                ELSIF ch.state IN ('error', 'cancelled') THEN
                    outcome := jsonb_build_object('status', 'failure', 'retryable', false,
                        'error', jsonb_build_object(
                            'kind', CASE ch.state WHEN 'error' THEN 'child_failed'
                                                  ELSE 'child_cancelled' END,
                            'message', format('child task %s (%s/%s@%s) ended %s%s', ch.id,
                                ch.namespace, ch.name, ch.version, ch.state,
                                COALESCE(': ' || (ch.error->>'message'), '')),
                            'child_task_id', ch.id));
                ELSE
                    -- Its child runs on (or was never started: the start puts it back).
                    UPDATE steps SET wake_at = CASE WHEN ch.id IS NULL THEN NULL
                                                    ELSE 'infinity' END
                    WHERE id = w.id;
                    CONTINUE;
                END IF;
            WHEN 'sleep' THEN
                outcome := jsonb_build_object('status', 'success',
                                              'result', jsonb_build_object('woke_at', now_));
            WHEN 'until' THEN
                SELECT tasker_wait_until(t.context,
                                         ARRAY(SELECT jsonb_array_elements_text(w.wait->'path')))
                INTO until_at FROM tasks t WHERE t.id = w.task_id;
                IF until_at IS NULL OR until_at > w.dispatched_at + interval '365 days' THEN
                    outcome := jsonb_build_object('status', 'failure', 'retryable', false,
                        'error', jsonb_build_object('kind', 'wait_until_invalid', 'message',
                            format('the context at %s must be an RFC 3339 time with an offset, '
                                   'at most a year ahead', w.wait->>'pointer')));
                ELSIF until_at > now_ THEN
                    -- Woken early (its begin could not read the time): sleep on.
                    UPDATE steps SET wake_at = until_at WHERE id = w.id;
                    CONTINUE;
                ELSE
                    outcome := jsonb_build_object('status', 'success',
                                                  'result', jsonb_build_object('woke_at', now_));
                END IF;
            ELSE
                WITH first AS (
                    SELECT task_id, signal_id FROM signals
                    WHERE task_id = w.task_id AND name = w.wait->>'signal' AND consumed_by IS NULL
                    ORDER BY received_at, signal_id LIMIT 1 FOR UPDATE SKIP LOCKED
                )
                UPDATE signals g SET consumed_by = w.id, consumed_at = now_
                FROM first WHERE g.task_id = first.task_id AND g.signal_id = first.signal_id
                RETURNING g.payload INTO payload;
                IF FOUND THEN
                    outcome := jsonb_build_object('status', 'success', 'result', payload);
                ELSIF now_ >= w.dispatched_at
                              + make_interval(secs => (w.wait->>'timeout_ms')::float8 / 1000) THEN
                    CASE w.wait->>'on_timeout'
                        WHEN 'continue' THEN
                            outcome := jsonb_build_object('status', 'success',
                                'result', jsonb_build_object('timed_out', true));
                        WHEN 'skip' THEN
                            skipped := skipped || w.id;
                            skipped_tasks := skipped_tasks || w.task_id;
                        ELSE
                            outcome := jsonb_build_object('status', 'failure', 'retryable', false,
                                'error', jsonb_build_object('kind', 'wait_timed_out', 'message',
                                    format('no signal `%s` arrived within %s', w.wait->>'signal',
                                           make_interval(secs => (w.wait->>'timeout_ms')::float8 / 1000))));
                    END CASE;
                ELSE
                    -- Woken for a signal another step took first: wait on until the timeout.
                    UPDATE steps
                    SET wake_at = w.dispatched_at
                                  + make_interval(secs => (w.wait->>'timeout_ms')::float8 / 1000)
                    WHERE id = w.id;
                    CONTINUE;
                END IF;
        END CASE;
        n := n + 1;
        UPDATE steps SET wake_at = NULL WHERE id = w.id;
        IF outcome IS NOT NULL THEN
            batch := batch || jsonb_build_object(
                'task_id', w.task_id, 'step_id', w.id, 'attempt', w.attempt, 'outcome', outcome,
                'started_at', w.dispatched_at, 'finished_at', now_, 'worker', 'orchestrator');
        END IF;
    END LOOP;

    IF jsonb_array_length(batch) > 0 THEN
        applied := tasker_apply_results(batch, NULL);
    END IF;

    -- Timed-out waits that skip: skipped, and their children counted down as skipped parents.
    IF cardinality(skipped) > 0 THEN
        WITH upd AS (
            UPDATE steps SET state = 'skipped', result = '{"timed_out": true}',
                             finished_at = now_, processed_at = now_
            WHERE id = ANY(skipped) AND state = 'enqueued'
            RETURNING id, task_id, attempt, wait
        )
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT task_id, id, 'enqueued', 'skipped', attempt,
               format('no signal `%s` arrived in time (on_timeout: skip)', wait->>'signal')
        FROM upd;
        SELECT * INTO cd FROM tasker_count_down_all(skipped, true);
        SELECT * INTO sk FROM tasker_skip(cd.skip);
        finished := tasker_close_steps(skipped_tasks || sk.closed);
        RETURN jsonb_build_object('applied', applied, 'woken', n,
            'skipped', tasker_applied(0, '{}', '[]', '{}', cd.ready || sk.ready, finished, '[]'));
    END IF;
    RETURN jsonb_build_object('applied', applied, 'woken', n, 'skipped', NULL);
END
$$;
