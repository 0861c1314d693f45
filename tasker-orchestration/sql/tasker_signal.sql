-- Stores signal `v_signal_id` named `v_name` for task `v_task`, once: the same id again with the
-- same name and payload changes nothing, with another is a conflict; a task that has ended
-- takes no signal. A stored signal waits until a wait step consumes it (tasker_wake), so one
-- that arrives before its wait begins is not lost: the task's wait steps are locked first (id
-- order, as everywhere), then the signal is stored, then the first step already waiting for
-- that name is woken now; a wait that begins concurrently either sees the signal or is woken.
-- Returns {outcome: created | existing | conflict | finished | no_task, signal, wake: [step id]}.
CREATE OR REPLACE FUNCTION tasker_signal(v_task uuid, v_name text, v_signal_id text,
                                         v_payload jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    st text;
    sig signals;
    woke uuid;
BEGIN
    PERFORM 1 FROM steps
    WHERE task_id = v_task AND step_type = 'wait' AND state IN ('pending', 'enqueued')
    ORDER BY id FOR UPDATE;
    SELECT state INTO st FROM tasks WHERE id = v_task;
    IF st IS NULL THEN
        RETURN jsonb_build_object('outcome', 'no_task');
    END IF;
    SELECT * INTO sig FROM signals WHERE task_id = v_task AND signal_id = v_signal_id;
    IF FOUND THEN
        RETURN jsonb_build_object(
            'outcome', CASE WHEN sig.name = v_name AND sig.payload = v_payload
                            THEN 'existing' ELSE 'conflict' END,
            'signal', to_jsonb(sig), 'wake', '[]'::jsonb);
    END IF;
    IF st NOT IN ('running', 'scheduled') THEN
        RETURN jsonb_build_object('outcome', 'finished', 'state', st);
    END IF;
    INSERT INTO signals (task_id, signal_id, name, payload)
    VALUES (v_task, v_signal_id, v_name, v_payload)
    ON CONFLICT (task_id, signal_id) DO NOTHING
    RETURNING * INTO sig;
    IF NOT FOUND THEN
        -- The same id sent concurrently: judged against the one stored.
        SELECT * INTO sig FROM signals WHERE task_id = v_task AND signal_id = v_signal_id;
        RETURN jsonb_build_object(
            'outcome', CASE WHEN sig.name = v_name AND sig.payload = v_payload
                            THEN 'existing' ELSE 'conflict' END,
            'signal', to_jsonb(sig), 'wake', '[]'::jsonb);
    END IF;
    WITH first AS (
        SELECT id FROM steps w
        WHERE task_id = v_task AND step_type = 'wait' AND tasker_held(w)
          AND wait->>'signal' = v_name
        ORDER BY dispatched_at, id LIMIT 1
    )
    UPDATE steps s SET wake_at = LEAST(s.wake_at, tasker_clock())
    FROM first WHERE s.id = first.id
    RETURNING s.id INTO woke;
    RETURN jsonb_build_object('outcome', 'created', 'signal', to_jsonb(sig),
                              'wake', CASE WHEN woke IS NULL THEN '[]'::jsonb
                                           ELSE jsonb_build_array(woke) END);
END
$$;
