-- Folds the tallies of steps `v_steps` into their pending_parents, and of tasks `v_tasks` into
-- their open_steps (migration 0036), for a caller that needs the exact counts. The rows are
-- locked first, in id order (steps, then tasks, as everywhere else), then every shard of their
-- tallies: a session still counting on a shard is waited for, and one that counts later waits
-- for this transaction and checks the folded row after its own commit (tasker_settle). Steps
-- and tasks without tallies are only locked.
CREATE OR REPLACE FUNCTION tasker_fold_tallies(v_steps uuid[], v_tasks uuid[]) RETURNS void
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    IF cardinality(v_steps) > 0 THEN
        PERFORM 1 FROM steps WHERE id = ANY (v_steps) ORDER BY id FOR UPDATE;
        WITH t AS (
            SELECT step_id, shard, n FROM step_tallies WHERE step_id = ANY (v_steps)
            ORDER BY step_id, shard FOR UPDATE
        ), zeroed AS (
            UPDATE step_tallies x SET n = 0 FROM t
            WHERE x.step_id = t.step_id AND x.shard = t.shard AND t.n <> 0
        ), sums AS (
            SELECT step_id, sum(n)::int AS n FROM t GROUP BY step_id HAVING sum(n) <> 0
        )
        UPDATE steps s SET pending_parents = s.pending_parents - sums.n
        FROM sums WHERE s.id = sums.step_id;
    END IF;
    IF cardinality(v_tasks) > 0 THEN
        PERFORM 1 FROM tasks WHERE id = ANY (v_tasks) ORDER BY id FOR UPDATE;
        WITH t AS (
            SELECT task_id, shard, n FROM task_tallies WHERE task_id = ANY (v_tasks)
            ORDER BY task_id, shard FOR UPDATE
        ), zeroed AS (
            UPDATE task_tallies x SET n = 0 FROM t
            WHERE x.task_id = t.task_id AND x.shard = t.shard AND t.n <> 0
        ), sums AS (
            SELECT task_id, sum(n)::int AS n FROM t GROUP BY task_id HAVING sum(n) <> 0
        )
        UPDATE tasks k SET open_steps = k.open_steps - sums.n
        FROM sums WHERE k.id = sums.task_id;
    END IF;
END
$$;
