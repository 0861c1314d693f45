-- Repair: a task that ended in error can be retried from its failed step, or the failed step
-- resolved by hand with a result.
--
-- `attempt_base` is the attempt a step's current round of attempts started after: a repair
-- gives a step its template's attempts again without ever reusing an attempt number (the
-- attempt fences stale results), so a step with `max_attempts` 3 retried after attempt 3 runs
-- attempts 4 to 6. Every step created before this migration starts from 0.
ALTER TABLE steps
    ADD COLUMN attempt_base integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT steps_attempt_base_check CHECK (attempt_base >= 0 AND attempt_base <= attempt);

-- Who asked for a transition made by hand (a repair); NULL for the engine's own transitions.
ALTER TABLE transitions
    ADD COLUMN actor text CHECK (char_length(actor) BETWEEN 1 AND 256);
