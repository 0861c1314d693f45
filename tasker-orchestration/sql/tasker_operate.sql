-- One batch of an operation by filter (migration 0023): acts on up to `n` of the tasks it
-- matched and has not yet acted on, in task id order, and records each one's outcome in this
-- transaction, so a batch is done once or not at all. `covers` is the regular expression of the
-- namespaces its token covers now (NULL: every one); a task outside them is left `forbidden`, a
-- task purged meanwhile `task_not_found`.
--
-- retry repairs the tasks in error all at once (tasker_repair_many), cancel ends the running and
-- scheduled ones all at once (tasker_end_tasks), resolve repairs them one by one (tasker_repair:
-- each task's step judges the result); a task no longer in a state the action takes is left
-- with the code tasker_repair would refuse it with (task_not_failed, task_not_running, ...).
-- The history of each task acted on names the operation and its reason, the actor its token.
--
-- Returns {state, acted, skipped, answers: [{dispatch, finished}, ...], finished: [{task_id,
-- state}]}; state is the operation's after the batch (`complete` once nothing is left), or
-- `busy` when another transaction holds the operation (nothing done).
CREATE OR REPLACE FUNCTION tasker_operate(v_op uuid, n int, covers text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    op record;
    batch uuid[];
    gone uuid[];
    outside uuid[];
    eligible uuid[];
    done uuid[] := '{}';
    answer jsonb;
    answers jsonb := '[]';
    finished jsonb := '[]';
    v_task uuid;
    why text;
    n_acted int;
BEGIN
    SELECT * INTO op FROM operations WHERE id = v_op FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('state', 'busy');
    ELSIF op.state <> 'running' THEN
        RETURN jsonb_build_object('state', op.state, 'acted', 0, 'skipped', 0);
    END IF;
    why := 'operation ' || v_op || COALESCE(': ' || op.reason, '');
    SELECT COALESCE(array_agg(b.task_id), '{}'),
           COALESCE(array_agg(b.task_id) FILTER (WHERE b.namespace IS NULL), '{}'),
           COALESCE(array_agg(b.task_id) FILTER (WHERE b.namespace !~ covers), '{}'),
           COALESCE(array_agg(b.task_id) FILTER (WHERE covers IS NULL OR b.namespace ~ covers), '{}')
    INTO batch, gone, outside, eligible
    FROM (SELECT o.task_id, t.namespace
          FROM operation_tasks o LEFT JOIN tasks t ON t.id = o.task_id
          WHERE o.operation_id = v_op AND o.outcome IS NULL
          ORDER BY o.task_id LIMIT n) b;

    IF op.action = 'retry' THEN
        answer := tasker_repair_many(eligible, op.actor, why);
        SELECT COALESCE(array_agg(r::uuid), '{}') INTO done
        FROM jsonb_array_elements_text(answer->'repaired') AS r;
        answers := jsonb_build_array(answer - 'repaired');
    ELSIF op.action = 'cancel' THEN
        done := tasker_end_tasks(eligible, 'cancelled by ' || why, op.actor);
        SELECT COALESCE(jsonb_agg(jsonb_build_object('task_id', d, 'state', 'cancelled')), '[]')
        INTO finished FROM unnest(done) AS d;
    ELSE
        FOREACH v_task IN ARRAY eligible LOOP
            answer := tasker_repair(v_task, NULL, op.resolution, op.actor, why);
            IF answer ? 'refused' THEN
                UPDATE operation_tasks SET outcome = answer->>'refused'
                WHERE operation_id = v_op AND task_id = v_task;
            ELSE
                done := done || v_task;
                answers := answers || jsonb_build_array(answer);
            END IF;
        END LOOP;
    END IF;

    UPDATE operation_tasks
    SET outcome = CASE WHEN task_id = ANY (done) THEN 'done'
                       WHEN task_id = ANY (gone) THEN 'task_not_found'
                       WHEN task_id = ANY (outside) THEN 'forbidden'
                       WHEN op.action = 'cancel' THEN 'task_not_running'
                       ELSE 'task_not_failed' END
    WHERE operation_id = v_op AND task_id = ANY (batch) AND outcome IS NULL;
    n_acted := cardinality(done);
    UPDATE operations
    SET acted = acted + n_acted, skipped = skipped + cardinality(batch) - n_acted,
        updated_at = clock_timestamp(),
        state = CASE WHEN cardinality(batch) < n THEN 'complete' ELSE state END,
        finished_at = CASE WHEN cardinality(batch) < n THEN clock_timestamp() END
    WHERE id = v_op;
    RETURN jsonb_build_object(
        'state', CASE WHEN cardinality(batch) < n THEN 'complete' ELSE 'running' END,
        'acted', n_acted, 'skipped', cardinality(batch) - n_acted, 'answers', answers,
        'finished', finished);
END
$$;
