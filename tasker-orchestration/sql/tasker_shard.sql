-- The tally shard this session counts on (0 to 15; migration 0036): sessions that apply results
-- at once mostly count on different rows. Two sessions that share a shard only wait for each
-- other, as they did on the step's own row.
CREATE OR REPLACE FUNCTION tasker_shard() RETURNS smallint
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT (pg_backend_pid() % 16)::smallint $$;
