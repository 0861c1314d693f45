-- Distributed tracing (tasker-telemetry, off unless configured): the W3C trace context of the
-- span that created a task, so every step message dispatched for it, by any orchestrator,
-- continues the task's trace. NULL when tracing was off.
ALTER TABLE tasks ADD COLUMN traceparent text;
