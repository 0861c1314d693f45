-- Moves pending / waiting_retry / throttled steps to enqueued (next attempt). Steps with limits
-- claim them first (tasker_claim): those that get them are enqueued too, the others wait
-- throttled. Returns what to publish for them (tasker_dispatched), with `throttled` (timed
-- waits to arm, [{step_id, delay_ms}]) and `waited` ([{kind, seconds}] of throttled steps now
-- enqueued) when some step has limits.
CREATE OR REPLACE FUNCTION tasker_dispatch(ids uuid[]) RETURNS jsonb LANGUAGE plpgsql
-- Every statement here is driven by step ids: index lookups whatever the statistics say (a
-- 100,000-step fan-out grows the tables faster than autovacuum re-analyzes them).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    enqueued uuid[];
    limited uuid[];
    more uuid[];
    cl record;
BEGIN
    IF COALESCE(array_length(ids, 1), 0) = 0 THEN
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'deferred', '[]'::jsonb);
    END IF;
    SELECT * INTO enqueued, limited FROM tasker_enqueue(ids, false);
    IF cardinality(limited) = 0 THEN
        RETURN tasker_dispatched(enqueued);
    END IF;
    SELECT * INTO cl FROM tasker_claim(limited);
    SELECT e.enqueued INTO more FROM tasker_enqueue(cl.granted, true) e;
    SELECT array_agg(x ORDER BY x) INTO enqueued FROM unnest(enqueued || more) AS x;
    RETURN tasker_dispatched(COALESCE(enqueued, '{}'))
           || jsonb_build_object('throttled', cl.throttled, 'waited', cl.waited);
END
$$;

-- Enqueues the next attempt of the steps among `ids` that may start: pending, waiting_retry or
-- throttled, and — unless `claimed` (their limits were claimed already) — without limits;
-- returns those enqueued and, apart, those that have limits to claim first.
CREATE OR REPLACE FUNCTION tasker_enqueue(ids uuid[], claimed boolean, OUT enqueued uuid[],
                                          OUT limited uuid[])
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    IF COALESCE(array_length(ids, 1), 0) = 0 THEN
        enqueued := '{}';
        limited := '{}';
        RETURN;
    END IF;
    WITH old AS (
        SELECT s.id, s.state, s.limits IS NOT NULL AND NOT claimed AS to_claim
        FROM unnest(ids) AS i(id) CROSS JOIN LATERAL (SELECT * FROM steps WHERE id = i.id OFFSET 0) s
        WHERE s.state IN ('pending', 'waiting_retry', 'throttled')
        ORDER BY s.id FOR UPDATE OF s
    ), upd AS (
        UPDATE steps s SET state = 'enqueued', attempt = s.attempt + 1, publish_count = 1,
                           dispatched_at = tasker_clock(), next_attempt_at = NULL,
                           wake_at = NULL, child_task_id = NULL,
                           dispatched_by = tasker_orchestrator()
        FROM old WHERE s.id = old.id AND NOT old.to_claim
        RETURNING s.id, s.task_id, s.attempt, old.state AS from_state
    ), hist AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT task_id, id, from_state, 'enqueued', attempt,
               CASE from_state WHEN 'pending' THEN 'parents done'
                               WHEN 'throttled' THEN 'limits claimed' ELSE 'retry' END
        FROM upd
    )
    SELECT COALESCE((SELECT array_agg(id ORDER BY id) FROM upd), '{}'),
           COALESCE((SELECT array_agg(id ORDER BY id) FROM old WHERE to_claim), '{}')
    INTO enqueued, limited;
END
$$;
