-- Running is a state you can see: a worker reports the attempts its handlers have been running
-- for a while (POST /v1/workers/{id}/running), and the step records which attempt is running.
-- The step stays `enqueued` for the engine; the API shows it `running` while this names its
-- current attempt (a retry, a repair or an ending moves the attempt or the state on, so a stale
-- mark never shows).
ALTER TABLE steps ADD COLUMN running_attempt integer;

-- Operations by filter over dead letters: replay or discard every dead letter a filter matched.
-- Written down when the operation starts, as its tasks are; each one's outcome is recorded in the
-- transaction that acts on it.
ALTER TABLE operations DROP CONSTRAINT operations_action_check;
ALTER TABLE operations ADD CONSTRAINT operations_action_check
    CHECK (action IN ('retry', 'resolve', 'cancel', 'replay', 'discard'));
CREATE TABLE operation_dead_letters (
    operation_id   uuid   NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    dead_letter_id bigint NOT NULL,
    -- NULL until acted on: replayed, discarded, or why it was left (gone, forbidden,
    -- not_replayable).
    outcome        text,
    PRIMARY KEY (operation_id, dead_letter_id)
);
CREATE INDEX operation_dead_letters_left ON operation_dead_letters (operation_id, dead_letter_id)
    WHERE outcome IS NULL;
