-- The tasks of a tasker_create_tasks batch (its `tasks` array) as rows: `n` is the task's
-- position in the batch (1-based); `plan` its template's plan in the batch's `plans` (0-based);
-- `step_ids` its steps' ids, and `limits`, `batch_specs`, `children` what its creation made of
-- them (each NULL, or an array by template step index).
CREATE OR REPLACE FUNCTION tasker_new_tasks(batch jsonb)
RETURNS TABLE (n int, id uuid, template_id uuid, namespace text, name text, version text,
               context jsonb, key text, run_at timestamptz, parent_task uuid, parent_step uuid,
               parent_attempt int, depth int, on_parent_cancel text, priority smallint,
               steps int, token_id bigint, root_task_id uuid, plan int, step_ids uuid[],
               limits jsonb, batch_specs jsonb, children jsonb)
LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM jsonb_to_recordset(batch->'tasks')
        AS x(n int, id uuid, template_id uuid, namespace text, name text, version text,
             context jsonb, key text, run_at timestamptz, parent_task uuid, parent_step uuid,
             parent_attempt int, depth int, on_parent_cancel text, priority smallint,
             steps int, token_id bigint, root_task_id uuid, plan int, step_ids uuid[],
             limits jsonb, batch_specs jsonb, children jsonb)
$$;
