-- Creates one instance of a batchable step's batch_worker per batch, all pending with nothing
-- to wait for (tasker_insert_batch_workers), for tasker_dispatch to enqueue: the path of a
-- repair's resolution. Returns the new step ids (to dispatch).
CREATE OR REPLACE FUNCTION tasker_expand_batches(v_task uuid, spec jsonb, batches jsonb) RETURNS uuid[]
LANGUAGE sql AS $$
    SELECT tasker_insert_batch_workers(v_task, spec, batches, false)
$$;
