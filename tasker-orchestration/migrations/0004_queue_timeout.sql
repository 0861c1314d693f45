-- A step's optional queue timeout (schedule to start): how long it may wait for a worker to
-- start it. NULL (the default, and every step created before this migration): no limit, so a
-- worker outage never fails a step that has not started. `timeout_ms` bounds the handler's run
-- from its start and is enforced by the worker.
ALTER TABLE steps
    ADD COLUMN queue_timeout_ms bigint,
    ADD CONSTRAINT steps_queue_timeout_check CHECK (queue_timeout_ms IS NULL OR queue_timeout_ms > 0);
