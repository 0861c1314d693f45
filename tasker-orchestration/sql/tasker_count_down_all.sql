-- Counts resolved (or, with parents_skipped, skipped) parents off their children at once: one
-- update per child however many of its parents are in the batch, so a convergence step with
-- 100,000 parents is updated once per batch of results, not once per parent. Children are
-- locked in id order (as everything else is) so concurrent orchestrators never deadlock.
-- The children are locked and a large fan-out's tallies folded in first (tasker_fold_tallies). Returns the children that became runnable and those
-- that can no longer run (to skip).
CREATE OR REPLACE FUNCTION tasker_count_down_all(parents uuid[], parents_skipped boolean,
                                                 OUT ready uuid[], OUT skip uuid[])
LANGUAGE plpgsql
-- Every statement here is driven by step ids: index lookups whatever the statistics say (a
-- 100,000-step fan-out grows the tables faster than autovacuum re-analyzes them).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    kid record;
    kids uuid[];
BEGIN
    ready := '{}';
    skip := '{}';
    IF COALESCE(array_length(parents, 1), 0) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(DISTINCT e.child_id) INTO kids
    FROM unnest(parents) AS p(id)
    CROSS JOIN LATERAL (SELECT child_id FROM step_edges WHERE parent_id = p.id OFFSET 0) e;
    PERFORM tasker_fold_tallies(COALESCE(kids, '{}'), '{}');
    FOR kid IN
        WITH c AS (
            SELECT e.child_id, count(*)::int AS n
            FROM unnest(parents) AS p(id)
            CROSS JOIN LATERAL (SELECT * FROM step_edges WHERE parent_id = p.id OFFSET 0) e
            GROUP BY e.child_id
        ), locked AS (
            SELECT s.id, c.n FROM steps s JOIN c ON c.child_id = s.id ORDER BY s.id FOR UPDATE OF s
        )
        UPDATE steps s SET pending_parents = s.pending_parents - locked.n,
                           skipped_parents = s.skipped_parents + parents_skipped::int * locked.n
        FROM locked WHERE s.id = locked.id
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
