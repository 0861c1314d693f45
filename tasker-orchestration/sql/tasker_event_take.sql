-- Gives event `e` to the event wait of step `step` (task `task`): the event is marked taken by
-- the step, stored as the task's signal `event:<name>` (which tasker_signal_outcome consumes:
-- the step's result is the event), the wait leaves event_waits, and the step wakes now.
CREATE OR REPLACE FUNCTION tasker_event_take(e events, step uuid, task uuid)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE events SET consumed_by = step, consumed_at = tasker_clock() WHERE id = e.id;
    INSERT INTO signals (task_id, signal_id, name, payload)
    VALUES (task, 'event:' || e.id, 'event:' || e.name, tasker_event_doc(e))
    ON CONFLICT (task_id, signal_id) DO NOTHING;
    DELETE FROM event_waits WHERE step_id = step;
    UPDATE steps SET wake_at = LEAST(wake_at, tasker_clock()) WHERE id = step;
END
$$;
