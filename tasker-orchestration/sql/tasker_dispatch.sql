-- Moves pending / waiting_retry steps to enqueued (next attempt) and returns their messages.
CREATE OR REPLACE FUNCTION tasker_dispatch(ids uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    enqueued uuid[];
BEGIN
    IF COALESCE(array_length(ids, 1), 0) = 0 THEN
        RETURN '[]'::jsonb;
    END IF;
    WITH old AS (
        SELECT id, state FROM steps
        WHERE id = ANY(ids) AND state IN ('pending', 'waiting_retry')
        ORDER BY id FOR UPDATE
    ), upd AS (
        UPDATE steps s SET state = 'enqueued', attempt = s.attempt + 1, publish_count = 1,
                           dispatched_at = clock_timestamp(), next_attempt_at = NULL,
                           dispatched_by = tasker_orchestrator()
        FROM old WHERE s.id = old.id
        RETURNING s.id, s.task_id, s.attempt, old.state AS from_state
    ), hist AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT task_id, id, from_state, 'enqueued', attempt,
               CASE from_state WHEN 'pending' THEN 'parents done' ELSE 'retry' END
        FROM upd
    )
    SELECT array_agg(id) INTO enqueued FROM upd;
    RETURN tasker_step_messages(enqueued);
END
$$;
