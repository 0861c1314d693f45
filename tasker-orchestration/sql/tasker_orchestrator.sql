-- The orchestrator this session works for (set on every pooled connection by the store), or NULL.
CREATE OR REPLACE FUNCTION tasker_orchestrator() RETURNS uuid LANGUAGE sql STABLE AS $$
    SELECT NULLIF(current_setting('tasker.orchestrator', true), '')::uuid
$$;
