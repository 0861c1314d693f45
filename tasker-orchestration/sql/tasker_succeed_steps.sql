-- Plain successes (a standard, convergence or batch-worker step's: nothing else of the DAG
-- changes) in one statement: the steps are marked completed with their results; counted off their
-- children, and children left with nothing to wait for are enqueued with their next attempt (or,
-- if they can no longer run, returned to be skipped); counted off their tasks, and a running task
-- left with no open step completes (announced with pg_notify); every transition is recorded. A
-- child of a large fan-out and its task are counted on tallies instead (migration 0036), and
-- their tasks noted for the check after the commit (tasker_tallied). One
-- statement instead of one for each of those parts: each statement costs PostgreSQL an executor
-- start and, for a table it writes, its constraints again, and an idle system applies one result
-- a batch. The success of every other step type (tasker_apply_shaped) ends here too.
--
-- The steps are locked already, in (task, step) order, and known to be enqueued with the
-- attempt reported; `results` are their StepResult objects in the same order. Children are
-- locked in id order, then tasks in id order, as everywhere else, so concurrent orchestrators
-- never deadlock. The statement's parts touch different rows (a step is never its own child,
-- and a step is enqueued only once all its parents are resolved), so none of them needs to see
-- another's writes.
-- A child with limits is left `pending` with nothing to wait for and returned in `limited`: it
-- claims its limits in tasker_dispatch (or is skipped there, like any step, if it cannot run).
CREATE OR REPLACE FUNCTION tasker_succeed_steps(ids uuid[], task_ids uuid[], attempts int[],
                                                results jsonb[], OUT enqueued uuid[],
                                                OUT skip uuid[], OUT finished jsonb,
                                                OUT limited uuid[])
LANGUAGE plpgsql
-- By primary key, one step at a time, however small the tables looked when the plan was made.
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    completed uuid[];
    counted_on_tallies uuid[];
    -- One instant for the whole batch: the parts of one statement run in no set order, and a
    -- step's children must not look dispatched before its result was processed.
    instant timestamptz := tasker_clock();
BEGIN
    WITH done AS (
        UPDATE steps s SET state = 'completed', result = x.r->'outcome'->'result',
                           started_at = (x.r->>'started_at')::timestamptz,
                           finished_at = (x.r->>'finished_at')::timestamptz,
                           worker = x.r->>'worker', processed_at = instant
        FROM unnest(ids, results) AS x(id, r)
        WHERE s.id = x.id
    ), counted AS (
        SELECT e.child_id, count(*)::int AS n
        FROM unnest(ids) AS p(id)
        CROSS JOIN LATERAL (SELECT * FROM step_edges WHERE parent_id = p.id OFFSET 0) e
        GROUP BY e.child_id
    ), kids AS (
        -- Each child once, locked, with what its count-down decides.
        SELECT s.id, c.n,
               s.state = 'pending' AND s.pending_parents - c.n <= 0 AS resolved,
               tasker_runnable(s.step_type, s.skipped_parents, s.parent_count) AS runnable,
               s.limits IS NULL AS free
        FROM steps s JOIN counted c ON c.child_id = s.id
        WHERE NOT EXISTS (SELECT 1 FROM step_tallies t WHERE t.step_id = s.id)
        ORDER BY s.id FOR UPDATE OF s
    ), tallied AS (
        -- A large fan-out's child: on this session's shard of its tallies (migration 0036).
        UPDATE step_tallies t SET n = t.n + c.n FROM counted c
        WHERE t.step_id = c.child_id AND t.shard = tasker_shard()
        RETURNING t.task_id
    ), kids_done AS (
        UPDATE steps s SET pending_parents = s.pending_parents - k.n,
                           state = CASE WHEN k.resolved AND k.runnable AND k.free THEN 'enqueued'
                                        ELSE s.state END,
                           attempt = s.attempt + (k.resolved AND k.runnable AND k.free)::int,
                           publish_count = CASE WHEN k.resolved AND k.runnable AND k.free THEN 1
                                                ELSE s.publish_count END,
                           dispatched_at = CASE WHEN k.resolved AND k.runnable AND k.free
                                                THEN instant ELSE s.dispatched_at END,
                           dispatched_by = CASE WHEN k.resolved AND k.runnable AND k.free
                                                THEN tasker_orchestrator() ELSE s.dispatched_by END
        FROM kids k WHERE s.id = k.id
        RETURNING s.id, s.task_id, s.attempt, k.resolved, k.runnable AND k.free AS runnable,
                  k.resolved AND k.runnable AND NOT k.free AS claims,
                  k.resolved AND NOT k.runnable AS unrunnable
    ), per_task AS (
        SELECT x.task_id, count(*)::int AS n FROM unnest(task_ids) AS x(task_id) GROUP BY x.task_id
    ), owners AS (
        -- Each task once, locked, and whether its last open step closes now.
        SELECT t.id, p.n, t.state = 'running' AND t.open_steps - p.n <= 0 AS ends
        FROM tasks t JOIN per_task p ON p.task_id = t.id
        WHERE NOT EXISTS (SELECT 1 FROM task_tallies x WHERE x.task_id = t.id)
        ORDER BY t.id FOR UPDATE OF t
    ), task_tallied AS (
        UPDATE task_tallies t SET n = t.n + p.n FROM per_task p
        WHERE t.task_id = p.task_id AND t.shard = tasker_shard()
        RETURNING t.task_id
    ), closed AS (
        -- A running task whose last open step closed completes, in the same update.
        UPDATE tasks t SET open_steps = t.open_steps - o.n,
                           state = CASE WHEN o.ends THEN 'complete' ELSE t.state END,
                           completed_at = CASE WHEN o.ends THEN instant
                                               ELSE t.completed_at END
        FROM owners o WHERE t.id = o.id
        RETURNING t.id, o.ends AS ended
    ), history AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
        SELECT x.task_id, x.id, 'enqueued', 'completed', x.attempt, 'succeeded'
        FROM unnest(task_ids, ids, attempts) AS x(task_id, id, attempt)
        UNION ALL
        SELECT task_id, id, 'pending', 'enqueued', attempt, 'parents done'
        FROM kids_done WHERE resolved AND runnable
        UNION ALL
        SELECT id, NULL, 'running', 'complete', NULL, 'all steps done' FROM closed WHERE ended
    )
    SELECT (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM kids_done
            WHERE resolved AND runnable),
           (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM kids_done WHERE unrunnable),
           (SELECT array_agg(id ORDER BY id) FROM closed WHERE ended),
           (SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM kids_done WHERE claims),
           -- Last: rows are locked before tallies (as in tasker_fold_tallies).
           (SELECT array_agg(DISTINCT x.task_id)
            FROM (SELECT task_id FROM tallied UNION ALL SELECT task_id FROM task_tallied) x)
    INTO enqueued, skip, completed, limited, counted_on_tallies;
    IF counted_on_tallies IS NOT NULL THEN
        PERFORM tasker_tallied(counted_on_tallies);
    END IF;
    finished := tasker_completed(completed);
END
$$;
