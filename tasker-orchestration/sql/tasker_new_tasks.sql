-- The tasks of a tasker_create_tasks batch (its `tasks` array) as rows: `n` is the task's
-- position in the batch (1-based), by which its steps and edges name it.
CREATE OR REPLACE FUNCTION tasker_new_tasks(batch jsonb)
RETURNS TABLE (n int, id uuid, template_id uuid, namespace text, name text, version text,
               context jsonb, key text, run_at timestamptz, parent_task uuid, parent_step uuid,
               parent_attempt int, depth int, on_parent_cancel text, priority smallint,
               steps int, token_id bigint, root_task_id uuid)
LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM jsonb_to_recordset(batch->'tasks')
        AS x(n int, id uuid, template_id uuid, namespace text, name text, version text,
             context jsonb, key text, run_at timestamptz, parent_task uuid, parent_step uuid,
             parent_attempt int, depth int, on_parent_cancel text, priority smallint,
             steps int, token_id bigint, root_task_id uuid)
$$;
