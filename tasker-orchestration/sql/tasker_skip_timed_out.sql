-- Skips signal waits that timed out with `on_timeout: skip` (tasker_wake): each of `ids` still
-- enqueued becomes `skipped` with {"timed_out": true}, its children are counted down as having
-- a skipped parent (and what depends on it alone is skipped too, like a decision's unchosen
-- branch), and the tasks of `tasks` that this ends are closed. Returns what that left to do
-- (tasker_applied's answer).
CREATE OR REPLACE FUNCTION tasker_skip_timed_out(ids uuid[], tasks uuid[], now_ timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    cd record;
    sk record;
BEGIN
    WITH upd AS (
        UPDATE steps SET state = 'skipped', result = '{"timed_out": true}',
                         finished_at = now_, processed_at = now_
        WHERE id = ANY (ids) AND state = 'enqueued'
        RETURNING id, task_id, attempt, wait
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
    SELECT task_id, id, 'enqueued', 'skipped', attempt,
           CASE WHEN wait->>'kind' = 'event'
                THEN format('no event `%s` matching it arrived in time (on_timeout: skip)',
                            wait->>'event')
                ELSE format('no signal `%s` arrived in time (on_timeout: skip)', wait->>'signal')
           END
    FROM upd;
    SELECT * INTO cd FROM tasker_count_down_all(ids, true);
    SELECT * INTO sk FROM tasker_skip(cd.skip);
    RETURN tasker_applied(0, '{}', '[]', '{}', cd.ready || sk.ready,
                          tasker_close_steps(tasks || sk.closed), '[]');
END
$$;
