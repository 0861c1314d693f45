-- One batch of an operation by filter (migration 0023): acts on up to `n` of the tasks it
-- matched and has not yet acted on, in task id order, and records each one's outcome in this
-- transaction, so a batch is done once or not at all. `covers` is the regular expression of the
-- namespaces its token covers now (NULL: every one); a task outside them is left `forbidden`.
--
-- retry and resolve repair a task in error (tasker_repair: its failed step runs again, or is
-- completed with the operation's resolution); cancel ends a running or scheduled task. The
-- history of each task acted on names the operation and its reason, the actor its token.
--
-- Returns {state, acted, skipped, answers: [tasker_repair's answer, ...], finished: [{task_id,
-- state}]}; state is the operation's after the batch (`complete` once nothing is left), or
-- `busy` when another transaction holds the operation (nothing done).
CREATE OR REPLACE FUNCTION tasker_operate(v_op uuid, n int, covers text)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    op record;
    item record;
    answer jsonb;
    answers jsonb := '[]';
    finished jsonb := '[]';
    v_outcome text;
    why text;
    n_acted int := 0;
    n_skipped int := 0;
    n_seen int := 0;
BEGIN
    SELECT * INTO op FROM operations WHERE id = v_op FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('state', 'busy');
    ELSIF op.state <> 'running' THEN
        RETURN jsonb_build_object('state', op.state, 'acted', 0, 'skipped', 0);
    END IF;
    why := 'operation ' || v_op || COALESCE(': ' || op.reason, '');
    FOR item IN
        SELECT o.task_id, t.namespace
        FROM operation_tasks o LEFT JOIN tasks t ON t.id = o.task_id
        WHERE o.operation_id = v_op AND o.outcome IS NULL
        ORDER BY o.task_id LIMIT n
    LOOP
        n_seen := n_seen + 1;
        IF item.namespace IS NULL THEN
            v_outcome := 'task_not_found';
        ELSIF covers IS NOT NULL AND item.namespace !~ covers THEN
            v_outcome := 'forbidden';
        ELSIF op.action = 'cancel' THEN
            IF tasker_end_task(item.task_id, 'cancelled', NULL, 'cancelled by ' || why,
                               op.actor) THEN
                v_outcome := 'done';
                finished := finished || jsonb_build_array(
                    jsonb_build_object('task_id', item.task_id, 'state', 'cancelled'));
            ELSE
                v_outcome := 'task_not_running';
            END IF;
        ELSE
            answer := tasker_repair(item.task_id, NULL, op.resolution, op.actor, why);
            v_outcome := COALESCE(answer->>'refused', 'done');
            IF v_outcome = 'done' THEN
                answers := answers || jsonb_build_array(answer);
            END IF;
        END IF;
        UPDATE operation_tasks SET outcome = v_outcome
        WHERE operation_id = v_op AND task_id = item.task_id;
        IF v_outcome = 'done' THEN
            n_acted := n_acted + 1;
        ELSE
            n_skipped := n_skipped + 1;
        END IF;
    END LOOP;
    UPDATE operations
    SET acted = acted + n_acted, skipped = skipped + n_skipped, updated_at = clock_timestamp(),
        state = CASE WHEN n_seen < n THEN 'complete' ELSE state END,
        finished_at = CASE WHEN n_seen < n THEN clock_timestamp() END
    WHERE id = v_op;
    RETURN jsonb_build_object('state', CASE WHEN n_seen < n THEN 'complete' ELSE 'running' END,
                              'acted', n_acted, 'skipped', n_skipped, 'answers', answers,
                              'finished', finished);
END
$$;
