-- Notes tasks that a result batch counted on tallies (tasker_succeed_steps, migration 0036), for
-- the answer of tasker_apply_results (tasker_applied, `tallied`), whose caller checks them after
-- the commit (tasker_settle). A transaction-local setting rather than one more output of every
-- function in between: a function whose signature changes needs a new name.
CREATE OR REPLACE FUNCTION tasker_tallied(v_tasks uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('tasker.tallied',
                       (SELECT array_agg(DISTINCT x)::text
                        FROM unnest(COALESCE(NULLIF(current_setting('tasker.tallied', true), ''),
                                             '{}')::uuid[] || v_tasks) AS x),
                       true);
END
$$;
