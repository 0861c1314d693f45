-- Running is a state you can see: a worker reports the attempts its handlers have been running
-- for a while (POST /v1/workers/{id}/running), and the step records which attempt is running.
-- The step stays `enqueued` for the engine; the API shows it `running` while this names its
-- current attempt (a retry, a repair or an ending moves the attempt or the state on, so a stale
-- mark never shows).
ALTER TABLE steps ADD COLUMN running_attempt integer;
