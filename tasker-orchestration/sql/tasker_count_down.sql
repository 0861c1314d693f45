-- Counts a resolved parent off its children: returns the children that became runnable and
-- those that can no longer run (to skip).
CREATE OR REPLACE FUNCTION tasker_count_down(v_parent uuid, parent_skipped boolean,
                                  OUT ready uuid[], OUT skip uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    kid record;
BEGIN
    ready := '{}';
    skip := '{}';
    FOR kid IN
        UPDATE steps s SET pending_parents = s.pending_parents - 1,
                           skipped_parents = s.skipped_parents + parent_skipped::int
        FROM step_edges e WHERE e.parent_id = v_parent AND s.id = e.child_id
        RETURNING s.id, s.state, s.step_type, s.pending_parents, s.skipped_parents, s.parent_count
    LOOP
        CONTINUE WHEN kid.state <> 'pending' OR kid.pending_parents > 0;
        IF tasker_runnable(kid.step_type, kid.skipped_parents, kid.parent_count) THEN
            ready := ready || kid.id;
        ELSE
            skip := skip || kid.id;
        END IF;
    END LOOP;
END
$$;
