-- Dead letters: messages no one could process (a malformed step or result message, a result
-- that could not be applied), kept with why and when until someone replays or discards them.
-- Workers and orchestrators move such a message to the dead-letter queue with its reason; the
-- orchestrators move it from there to this table.
CREATE TABLE dead_letters (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The queue it was taken from; NULL when its headers do not say.
    queue text,
    reason text NOT NULL,
    body bytea NOT NULL,
    -- sha256(body): the same message dead again (redelivered, or replayed and refused again)
    -- is one entry seen more than once.
    digest bytea NOT NULL,
    -- Its AMQP headers, as JSON.
    headers jsonb NOT NULL DEFAULT '{}',
    -- The task and step it names, when its body can be read that far.
    task_id uuid,
    step_id uuid,
    first_seen timestamptz NOT NULL DEFAULT now(),
    last_seen timestamptz NOT NULL DEFAULT now(),
    times_seen integer NOT NULL DEFAULT 1 CHECK (times_seen >= 1)
);

CREATE UNIQUE INDEX dead_letters_message ON dead_letters (digest, (coalesce(queue, '')));
CREATE INDEX dead_letters_task ON dead_letters (task_id) WHERE task_id IS NOT NULL;
