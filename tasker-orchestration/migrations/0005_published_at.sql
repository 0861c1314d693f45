-- When the broker confirmed the publication of a step's current attempt (NULL: not yet). A
-- confirmed message sits in a durable queue and is never lost, so the sweeper re-publishes only
-- steps whose publication was never confirmed (their orchestrator died between commit and
-- confirm), never a healthy step that is simply running longer than the visibility timeout.
ALTER TABLE steps ADD COLUMN published_at timestamptz;
