-- Starts scheduled tasks whose time has come (at most `lim`, oldest first): each becomes
-- running and its root steps are dispatched. Steps are locked before their task, as on every
-- other path, and a task another orchestrator (or a cancel) holds is left for the next pass.
-- A task with a deadline gets its `deadline_at` now.
-- Returns {started: [task ids], dispatch: tasker_dispatch(…)}.
CREATE OR REPLACE FUNCTION tasker_start_tasks(lim int)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    due uuid[];
    started uuid[];
    roots uuid[];
    -- A variable, not tasker_clock() in the query: a bound the index can range over.
    now_ timestamptz := tasker_clock();
BEGIN
    SELECT COALESCE(array_agg(id ORDER BY id), '{}') INTO due
    FROM (SELECT id FROM tasks WHERE state = 'scheduled' AND run_at <= now_
          ORDER BY run_at LIMIT lim) d;
    IF cardinality(due) = 0 THEN
        RETURN jsonb_build_object('started', '[]'::jsonb,
                                  'dispatch', jsonb_build_object('messages', '[]'::jsonb,
                                                                 'deferred', '[]'::jsonb));
    END IF;
    PERFORM 1 FROM steps WHERE task_id = ANY(due) AND state = 'pending' AND parent_count = 0
    ORDER BY id FOR UPDATE SKIP LOCKED;
    WITH locked AS (
        SELECT id FROM tasks WHERE id = ANY(due) AND state = 'scheduled'
        ORDER BY id FOR UPDATE SKIP LOCKED
    ), upd AS (
        -- A deadline counts from the start.
        UPDATE tasks t SET state = 'running',
                           deadline_at = now_ + t.deadline_ms * interval '1 millisecond'
        FROM locked WHERE t.id = locked.id RETURNING t.id
    ), hist AS (
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        SELECT id, 'scheduled', 'running', 'start time reached' FROM upd
    )
    SELECT COALESCE(array_agg(id ORDER BY id), '{}') INTO started FROM upd;
    SELECT COALESCE(array_agg(id ORDER BY id), '{}') INTO roots
    FROM steps WHERE task_id = ANY(started) AND state = 'pending' AND parent_count = 0;
    RETURN jsonb_build_object('started', to_jsonb(started), 'dispatch', tasker_dispatch(roots));
END
$$;
