-- A request `t` (a task row of a tasker_create_tasks batch, its template's plan `plan`) joins
-- the trailing burst whose scheduled task is `task` (tasker_start_controls, which holds the
-- task's lock): the task takes its context and token and starts at `at`, and its steps take
-- what their limits read of the new context (and a batchable step its batch worker's).
CREATE OR REPLACE FUNCTION tasker_debounce_join(task uuid, t jsonb, plan jsonb,
                                                at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tasks SET context = t->'context', run_at = at, token_id = (t->>'token_id')::bigint
    WHERE id = task;
    UPDATE steps s SET limits = NULLIF(t->'limits'->sp.i, 'null'),
                       batch_spec = NULLIF(t->'batch_specs'->sp.i, 'null')
    FROM jsonb_to_recordset(plan->'steps') AS sp(i int, name text)
    WHERE s.task_id = task AND s.name = sp.name;
END
$$;
