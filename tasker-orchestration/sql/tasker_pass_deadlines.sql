-- Gives the running tasks past their deadline (at most `lim`, earliest first) their action,
-- once: `fail` ends one in error, `cancel` cancels it (tasker_end_task: its open steps now, its
-- children by their own `on_parent_cancel`), `alert` leaves it running. Either way its
-- deadline is spent: `deadline_at` cleared, `deadline_passed_at` set. Ends go through
-- tasker_end_task, which takes its locks in the result path's order; a task another
-- orchestrator ended or passed meanwhile is skipped.
-- Returns {ended: [{task_id, state}], alerted: [task ids]}.
CREATE OR REPLACE FUNCTION tasker_pass_deadlines(lim int)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    -- A variable, not tasker_clock() in the query: a bound the index can range over.
    now_ timestamptz := tasker_clock();
    t record;
    ended jsonb := '[]';
    alerted jsonb := '[]';
    why text;
BEGIN
    FOR t IN SELECT id, deadline_at, deadline_ms, deadline_action FROM tasks
             WHERE state = 'running' AND deadline_at IS NOT NULL AND deadline_at <= now_
             ORDER BY deadline_at LIMIT lim
    LOOP
        why := format('deadline passed: %ss after its start, at %s',
                      trim_scale(t.deadline_ms / 1000.0), t.deadline_at);
        IF t.deadline_action = 'alert' THEN
            UPDATE tasks SET deadline_at = NULL, deadline_passed_at = now_
            WHERE id = t.id AND state = 'running' AND deadline_at IS NOT NULL;
            IF FOUND THEN
                alerted := alerted || to_jsonb(t.id);
            END IF;
        ELSIF tasker_end_task(t.id,
                              CASE WHEN t.deadline_action = 'cancel' THEN 'cancelled'
                                   ELSE 'error' END,
                              CASE WHEN t.deadline_action = 'cancel' THEN NULL
                                   ELSE jsonb_build_object('kind', 'deadline_passed',
                                                           'message', why,
                                                           'deadline_at', t.deadline_at) END,
                              why) THEN
            UPDATE tasks SET deadline_at = NULL, deadline_passed_at = now_ WHERE id = t.id;
            ended := ended || jsonb_build_object(
                'task_id', t.id,
                'state', CASE WHEN t.deadline_action = 'cancel' THEN 'cancelled' ELSE 'error' END);
        END IF;
    END LOOP;
    RETURN jsonb_build_object('ended', ended, 'alerted', alerted);
END
$$;
