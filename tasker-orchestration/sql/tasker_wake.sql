-- Resolves wait steps whose time has come (at most `lim`, oldest first; rows another
-- orchestrator holds are skipped, so any number can run this at once). What each comes to is
-- its kind's (tasker_child_outcome, tasker_until_outcome, tasker_signal_outcome): an outcome,
-- applied as a result (tasker_apply_results), so what follows is exactly what a worker's result
-- would do; a time to look again (the step waits on); or a skip (tasker_skip_timed_out).
--   sleep → completed with {"woke_at": …};
--   until → completed when its time came, else it waits on, or fails `wait_until_invalid`;
--   signal → completed with the signal it consumed, or its timeout's `on_timeout`;
--   child (its child task ended: tasker_task_ended woke it) → the child's result or failure.
-- Returns {applied: <tasker_apply_results answer>, skipped: <tasker_applied answer>, woken: n}.
CREATE OR REPLACE FUNCTION tasker_wake(lim int)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    w record;
    now_ timestamptz := tasker_clock();
    batch jsonb := '[]';
    skipped uuid[] := '{}';
    skipped_tasks uuid[] := '{}';
    comes jsonb;
    applied jsonb;
    n int := 0;
BEGIN
    FOR w IN
        SELECT s.id, s.task_id, s.attempt, s.wait, s.dispatched_at, s.child_task_id,
               CASE WHEN s.step_type = 'child' THEN 'child' ELSE s.wait->>'kind' END AS kind
        FROM steps s
        WHERE tasker_held(s) AND s.wake_at <= now_
        ORDER BY s.wake_at LIMIT lim
        FOR UPDATE OF s SKIP LOCKED
    LOOP
        comes := CASE w.kind
            WHEN 'child' THEN tasker_child_outcome(w.child_task_id)
            WHEN 'sleep' THEN jsonb_build_object('outcome', jsonb_build_object(
                'status', 'success', 'result', jsonb_build_object('woke_at', now_)))
            WHEN 'until' THEN tasker_until_outcome(w.task_id, w.wait, w.dispatched_at, now_)
            ELSE tasker_signal_outcome(w.id, w.task_id, w.wait, w.dispatched_at, now_)
        END;
        IF comes ? 'rearm' THEN
            UPDATE steps SET wake_at = (comes->>'rearm')::timestamptz WHERE id = w.id;
            CONTINUE;
        END IF;
        n := n + 1;
        UPDATE steps SET wake_at = NULL WHERE id = w.id;
        IF comes ? 'skip' THEN
            skipped := skipped || w.id;
            skipped_tasks := skipped_tasks || w.task_id;
        ELSE
            batch := batch || jsonb_build_object(
                'task_id', w.task_id, 'step_id', w.id, 'attempt', w.attempt,
                'outcome', comes->'outcome', 'started_at', w.dispatched_at, 'finished_at', now_,
                'worker', 'orchestrator');
        END IF;
    END LOOP;

    IF jsonb_array_length(batch) > 0 THEN
        applied := tasker_apply_results(batch, NULL);
    END IF;
    RETURN jsonb_build_object('applied', applied, 'woken', n, 'skipped',
        CASE WHEN cardinality(skipped) > 0
             THEN tasker_skip_timed_out(skipped, skipped_tasks, now_) END);
END
$$;
