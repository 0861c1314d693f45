-- What a task's end does to the tasks around it, in the transaction that ends it, whichever
-- function ended it (a result batch, a failure, a cancel, a child's own cascade):
--   a child task wakes its parent step, if that step still waits for this very child (not for
--     a newer attempt's), and the orchestrators are told to look (`tasker_wake`: the step then
--     completes with the child's result or fails with its id);
--   a parent that ends in error or cancelled cancels its running children whose step said
--     `on_parent_cancel: cancel` (the default), and through this same trigger theirs: the whole
--     tree ends in one transaction, so no step of it is dispatched after the commit.
-- The trigger fires only for tasks with a parent or children (its WHEN clause), so the other
-- tasks' completions pay nothing for it.
CREATE OR REPLACE FUNCTION tasker_task_ended() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    IF NEW.parent_step_id IS NOT NULL THEN
        UPDATE steps SET wake_at = tasker_clock()
        WHERE id = NEW.parent_step_id AND state = 'enqueued' AND child_task_id = NEW.id;
        IF FOUND THEN
            PERFORM pg_notify('tasker_wake', NEW.parent_step_id::text);
        END IF;
    END IF;
    IF NEW.has_children AND NEW.state IN ('error', 'cancelled') THEN
        FOR c IN
            SELECT id FROM tasks
            WHERE parent_task_id = NEW.id AND state IN ('running', 'scheduled')
              AND on_parent_cancel = 'cancel'
            ORDER BY id
        LOOP
            PERFORM tasker_end_task(c.id, 'cancelled', NULL,
                                    format('its parent task %s ended %s', NEW.id, NEW.state));
        END LOOP;
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER tasks_ended AFTER UPDATE OF state ON tasks
FOR EACH ROW
WHEN (OLD.state IS DISTINCT FROM NEW.state
      AND NEW.state IN ('complete', 'error', 'cancelled')
      AND (NEW.parent_step_id IS NOT NULL OR NEW.has_children))
EXECUTE FUNCTION tasker_task_ended();
