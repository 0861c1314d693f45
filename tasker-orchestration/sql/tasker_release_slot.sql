-- A step leaving flight (completed, failed, waiting for its retry, cancelled, skipped; however
-- it happens: a result, a timeout, a cancel, a repair) gives back its concurrency slot in the
-- same transaction, and marks the key so the orchestrators' timers start the next step waiting
-- for it (notified on `tasker_wake`). A trigger, so no way out of flight can forget it.
CREATE OR REPLACE FUNCTION tasker_release_slot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE concurrency_slots SET in_use = greatest(in_use - 1, 0), wake = true
    WHERE key = OLD.slot;
    NEW.slot := NULL;
    PERFORM pg_notify('tasker_wake', '');
    RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER steps_release_slot BEFORE UPDATE OF state ON steps
FOR EACH ROW WHEN (OLD.slot IS NOT NULL AND NEW.state NOT IN ('enqueued', 'throttled'))
EXECUTE FUNCTION tasker_release_slot();
