-- Finished tasks a purge may remove, oldest completion first, at most p_limit: for each state
-- of p_states, those completed before its cut-off in p_before — never one whose parent task is
-- unfinished (its child step waits for it) or that has an unfinished child (the child reports
-- to it). Unfinished means not yet completed: running or scheduled.
CREATE OR REPLACE FUNCTION tasker_purgeable(p_states text[], p_before timestamptz[], p_limit int)
RETURNS TABLE (id uuid, state text) LANGUAGE sql STABLE AS $$
    SELECT c.id, c.state
    FROM unnest(p_states, p_before) AS p(state, before)
    CROSS JOIN LATERAL (
        SELECT t.id, t.state::text AS state, t.completed_at
        FROM tasks t
        WHERE t.state = p.state AND t.completed_at IS NOT NULL AND t.completed_at < p.before
          AND (t.parent_task_id IS NULL OR NOT EXISTS (
                SELECT 1 FROM tasks up
                WHERE up.id = t.parent_task_id AND up.completed_at IS NULL))
          AND (NOT t.has_children OR NOT EXISTS (
                SELECT 1 FROM tasks ch
                WHERE ch.parent_task_id = t.id AND ch.completed_at IS NULL))
        ORDER BY t.completed_at
        LIMIT p_limit) c
    ORDER BY c.completed_at
    LIMIT p_limit
$$;
