-- Retries the tasks of `v_tasks` that are in error, all in one pass, as tasker_repair(task, NULL,
-- NULL, v_actor, why) would one at a time: the steps that failed each (on_failure fail_task) wait
-- to retry with fresh attempts, the steps the failure cancelled wait for their parents again,
-- the pending steps with nothing left to wait for run (or are skipped, and so on down the DAG),
-- and each task is running again (or complete if nothing is left to run), its history saying who
-- and why. Set-based, so an operation by filter retries a batch of tasks in a handful of
-- statements (tasker_operate).
--
-- Locks the tasks in error in id order first, as tasker_repair locks its one task row first:
-- nothing else locks a task's steps while it is in error.
--
-- Returns {repaired: [ids], dispatch: tasker_dispatch(…), finished: [{task_id, state}]}; a task
-- not in error (any more) is left out of `repaired`, having changed nothing.
CREATE OR REPLACE FUNCTION tasker_repair_many(v_tasks uuid[], v_actor text, why text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    fixed uuid[];
    ready uuid[];
    skip uuid[];
    sk record;
    note text := COALESCE('retried: ' || why, 'retried');
    finished jsonb;
BEGIN
    SELECT COALESCE(array_agg(id ORDER BY id), '{}') INTO fixed
    FROM (SELECT id FROM tasks WHERE id = ANY (v_tasks) AND state = 'error'
          ORDER BY id FOR UPDATE) t;
    IF cardinality(fixed) = 0 THEN
        RETURN jsonb_build_object('repaired', '[]'::jsonb, 'dispatch', tasker_dispatch('{}'),
                                  'finished', '[]'::jsonb);
    END IF;
    -- Counts on tallies (a large fan-out's) are folded in, so the steps are counted as they
    -- are (the open steps are counted again below).
    PERFORM tasker_fold_tallies(ARRAY(SELECT DISTINCT step_id FROM step_tallies
                                      WHERE task_id = ANY (fixed)), fixed);

    -- The steps the failures cancelled wait for their parents again, with fresh attempts.
    WITH upd AS (
        UPDATE steps SET state = 'pending', attempt_base = attempt, next_attempt_at = NULL
        WHERE task_id = ANY (fixed) AND state = 'cancelled'
        RETURNING task_id, id, attempt
    )
    INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
    SELECT task_id, id, 'cancelled', 'pending', attempt, 'task repaired', v_actor FROM upd;

    -- The steps that failed them run again.
    WITH upd AS (
        UPDATE steps SET state = 'waiting_retry', attempt_base = attempt, next_attempt_at = NULL
        WHERE task_id = ANY (fixed) AND state = 'failed' AND on_failure = 'fail_task'
        RETURNING task_id, id, attempt
    ), logged AS (
        INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, actor)
        SELECT task_id, id, 'failed', 'waiting_retry', attempt, note, v_actor FROM upd
    )
    SELECT COALESCE(array_agg(id), '{}') INTO ready FROM upd;

    -- As tasker_repair_resume, for every task at once.
    SELECT ready || COALESCE(array_agg(id) FILTER (WHERE tasker_runnable(step_type, skipped_parents, parent_count)), '{}'),
           COALESCE(array_agg(id) FILTER (WHERE NOT tasker_runnable(step_type, skipped_parents, parent_count)), '{}')
    INTO ready, skip
    FROM steps WHERE task_id = ANY (fixed) AND state = 'pending' AND pending_parents = 0;
    IF cardinality(skip) > 0 THEN
        SELECT * INTO sk FROM tasker_skip(skip);
        ready := ready || sk.ready;
    END IF;
    SELECT COALESCE(array_agg(DISTINCT r), '{}') INTO ready FROM unnest(ready) AS r;

    WITH open AS (
        SELECT f.id, (SELECT count(*) FROM steps s
                      WHERE s.task_id = f.id
                        AND s.state IN ('pending', 'enqueued', 'waiting_retry', 'throttled'))::int AS n
        FROM unnest(fixed) AS f(id)
    ), upd AS (
        UPDATE tasks t SET state = 'running', error = NULL, completed_at = NULL, open_steps = o.n
        FROM open o WHERE t.id = o.id
        RETURNING t.id, o.n
    ), logged AS (
        INSERT INTO transitions (task_id, from_state, to_state, reason, actor)
        SELECT id, 'error', 'running', note, v_actor FROM upd
    )
    SELECT COALESCE(jsonb_agg(jsonb_build_object('task_id', id, 'state', 'complete')) FILTER (WHERE n = 0), '[]')
    INTO finished FROM upd;
    -- A task with nothing left to run is complete at once (a second statement: the one above
    -- cannot update a row twice).
    IF jsonb_array_length(finished) > 0 THEN
        WITH done AS (
            UPDATE tasks SET state = 'complete', completed_at = tasker_clock()
            WHERE id IN (SELECT (f->>'task_id')::uuid FROM jsonb_array_elements(finished) f)
            RETURNING id
        )
        INSERT INTO transitions (task_id, from_state, to_state, reason)
        SELECT id, 'running', 'complete', 'all steps done' FROM done;
        PERFORM pg_notify('tasker_task_finished', (f->>'task_id') || ':complete')
        FROM jsonb_array_elements(finished) f;
    END IF;
    RETURN jsonb_build_object('repaired', to_jsonb(fixed), 'dispatch', tasker_dispatch(ready),
                              'finished', finished);
END
$$;
