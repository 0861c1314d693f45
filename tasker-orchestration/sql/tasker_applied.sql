-- The answer of tasker_apply_results: what was accepted, ignored and rejected, and the steps
-- it leaves to publish or hold — those it enqueued already (tasker_dispatched) and those
-- ready to enqueue now (tasker_dispatch) — and the tasks it counted on tallies, to settle.
CREATE OR REPLACE FUNCTION tasker_applied(accepted int, ignored uuid[], rejected jsonb,
                                          enqueued uuid[], ready uuid[], finished jsonb,
                                          retries jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    sent jsonb := tasker_dispatched(enqueued);
    sent_too jsonb;
BEGIN
    IF cardinality(ready) > 0 THEN
        sent_too := tasker_dispatch(ready);
        -- Steps with limits may have waited (`waited`) or been throttled (`throttled`).
        -- Held steps of either (tasker_hold: `waits`, `children`) are kept too.
        sent := sent_too || jsonb_build_object(
            'messages', (sent->'messages') || (sent_too->'messages'),
            'deferred', (sent->'deferred') || (sent_too->'deferred'),
            'waits', COALESCE(sent->'waits', '[]') || COALESCE(sent_too->'waits', '[]'),
            'children', COALESCE(sent->'children', '[]') || COALESCE(sent_too->'children', '[]'));
    END IF;
    RETURN jsonb_build_object('accepted', accepted, 'ignored', to_jsonb(ignored),
                              'rejected', rejected, 'dispatch', sent, 'finished', finished,
                              'retries', retries,
                              -- Tasks counted on tallies (tasker_tallied): check them once
                              -- committed (tasker_settle).
                              'tallied', COALESCE(NULLIF(current_setting('tasker.tallied', true),
                                                         ''), '{}')::uuid[]);
END
$$;
