-- Whether a step whose parents are all resolved runs (true) or is skipped (false).
CREATE OR REPLACE FUNCTION tasker_runnable(step_type text, skipped_parents int, parent_count int)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN step_type = 'convergence' THEN skipped_parents < parent_count
                ELSE skipped_parents = 0 END
$$;
