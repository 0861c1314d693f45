-- Purges one batch of finished tasks (tasker_purgeable: at most p_limit) in the caller's
-- transaction, with their steps, edges, history, signals and dead letters, and leaves a
-- tombstone for each (purged_tasks). Everything of a task goes in this one transaction, so a
-- crash leaves it whole or gone.
--
-- One purge runs at a time in a cluster (a transaction advisory lock): with p_wait false a
-- purge that finds another under way answers {busy: true} at once; with p_wait true it waits
-- its turn. Each task is locked SKIP LOCKED and checked again under its lock: a task someone
-- is touching (a repair resuming it, say) waits for a later pass.
--
-- Answers {tasks, by_state: {state: n}, rows: {table: n}, bytes} (bytes: the rows' data, as
-- pg_column_size counts it).
CREATE OR REPLACE FUNCTION tasker_purge_tasks(p_states text[], p_before timestamptz[],
                                              p_limit int, p_wait boolean)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    ids uuid[];
    answer jsonb;
BEGIN
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(hashtext('tasker_purge_tasks'));
    ELSIF NOT pg_try_advisory_xact_lock(hashtext('tasker_purge_tasks')) THEN
        RETURN jsonb_build_object('busy', true);
    END IF;
    SELECT COALESCE(array_agg(l.id), '{}') INTO ids
    FROM (SELECT t.id FROM tasks t
          WHERE t.id = ANY (ARRAY(SELECT c.id FROM tasker_purgeable(p_states, p_before, p_limit) c))
            AND t.completed_at IS NOT NULL
          FOR UPDATE SKIP LOCKED) l;
    WITH sig AS (DELETE FROM signals WHERE task_id = ANY (ids)
                 RETURNING pg_column_size(signals.*) AS b),
         edg AS (DELETE FROM step_edges e USING steps s
                 WHERE s.task_id = ANY (ids) AND e.parent_id = s.id
                 RETURNING pg_column_size(e.*) AS b),
         tra AS (DELETE FROM transitions WHERE task_id = ANY (ids)
                 RETURNING pg_column_size(transitions.*) AS b),
         dea AS (DELETE FROM dead_letters WHERE task_id = ANY (ids)
                 RETURNING pg_column_size(dead_letters.*) AS b),
         stp AS (DELETE FROM steps WHERE task_id = ANY (ids)
                 RETURNING pg_column_size(steps.*) AS b),
         stt AS (DELETE FROM step_tallies WHERE task_id = ANY (ids)),
         tat AS (DELETE FROM task_tallies WHERE task_id = ANY (ids)),
         tsk AS (DELETE FROM tasks WHERE id = ANY (ids)
                 RETURNING id, state, pg_column_size(tasks.*) AS b),
         tomb AS (INSERT INTO purged_tasks (id, state) SELECT id, state FROM tsk
                  ON CONFLICT (id) DO NOTHING),
         counted AS (SELECT 'tasks' AS what, b FROM tsk UNION ALL
                     SELECT 'steps', b FROM stp UNION ALL
                     SELECT 'edges', b FROM edg UNION ALL
                     SELECT 'transitions', b FROM tra UNION ALL
                     SELECT 'signals', b FROM sig UNION ALL
                     SELECT 'dead_letters', b FROM dea)
    SELECT jsonb_build_object(
               'tasks', (SELECT count(*) FROM tsk),
               'by_state', (SELECT COALESCE(jsonb_object_agg(s.state, s.n), '{}')
                            FROM (SELECT state, count(*) AS n FROM tsk GROUP BY state) s),
               'rows', (SELECT COALESCE(jsonb_object_agg(r.what, r.n), '{}')
                        FROM (SELECT what, count(*) AS n FROM counted GROUP BY what) r),
               'bytes', (SELECT COALESCE(sum(b), 0) FROM counted))
    INTO answer;
    RETURN answer;
END
$$;
