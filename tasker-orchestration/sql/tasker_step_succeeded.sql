-- What a step's success does to the rest of its DAG before its children are counted down: a
-- decision skips the branches it did not choose (so they are no longer pending then), a
-- batchable step creates its batches (so its children wait for them). Returns the steps that
-- became runnable and, per skipped step, its task (to close it).
CREATE OR REPLACE FUNCTION tasker_step_succeeded(v_task uuid, v_type text, v_branches jsonb,
                                                 v_spec jsonb, v_result jsonb,
                                                 OUT ready uuid[], OUT closed uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    not_chosen uuid[];
    sk record;
BEGIN
    ready := '{}';
    closed := '{}';
    IF v_type = 'decision' THEN
        SELECT array_agg(s.id) INTO not_chosen
        FROM jsonb_array_elements_text(v_branches) AS b(name)
        JOIN steps s ON s.task_id = v_task AND s.name = b.name
        WHERE NOT (v_result->'branches' ? b.name);
        SELECT * INTO sk FROM tasker_skip(COALESCE(not_chosen, '{}'));
        ready := sk.ready;
        closed := sk.closed;
    ELSIF v_type = 'batchable' THEN
        ready := tasker_expand_batches(v_task, v_spec, v_result->'batches');
    END IF;
END
$$;
