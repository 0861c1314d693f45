-- Moves pending / waiting_retry steps to enqueued (next attempt). Returns what to publish for
-- them (tasker_dispatched).
CREATE OR REPLACE FUNCTION tasker_dispatch(ids uuid[]) RETURNS jsonb LANGUAGE plpgsql
-- Every statement here is driven by step ids: index lookups whatever the statistics say (a
-- 100,000-step fan-out grows the tables faster than autovacuum re-analyzes them).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    enqueued uuid[];
BEGIN
    IF COALESCE(array_length(ids, 1), 0) = 0 THEN
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'deferred', '[]'::jsonb);
    END IF;
    WITH old AS (
        SELECT s.id, s.state
        FROM unnest(ids) AS i(id) CROSS JOIN LATERAL (SELECT * FROM steps WHERE id = i.id OFFSET 0) s
        WHERE s.state IN ('pending', 'waiting_retry')
        ORDER BY s.id FOR UPDATE OF s
    ), upd AS (
        UPDATE steps s SET state = 'enqueued', attempt = s.attempt + 1, publish_count = 1,
                           dispatched_at = clock_timestamp(), next_attempt_at = NULL,
                           wake_at = NULL, child_task_id = NULL,
                           dispatched_by = tasker_orchestrator()
        FROM old WHERE s.id = old.id
        RETURNING s.id, s.task_id, s.attempt, old.state AS from_state
    ), hist AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT task_id, id, from_state, 'enqueued', attempt,
               CASE from_state WHEN 'pending' THEN 'parents done' ELSE 'retry' END
        FROM upd
    )
    SELECT array_agg(id ORDER BY id) INTO enqueued FROM upd;
    RETURN tasker_dispatched(enqueued);
END
$$;
