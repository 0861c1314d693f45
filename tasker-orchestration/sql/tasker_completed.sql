-- Announces tasks that completed in this transaction (pg_notify, delivered at the commit) and
-- returns them as [{task_id, state: "complete"}], in the order given.
CREATE OR REPLACE FUNCTION tasker_completed(completed uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tasker_task_finished', c || ':complete')
    FROM unnest(completed) WITH ORDINALITY AS x(c, i) ORDER BY i;
    RETURN COALESCE((SELECT jsonb_agg(jsonb_build_object('task_id', c, 'state', 'complete')
                                      ORDER BY i)
                     FROM unnest(completed) WITH ORDINALITY AS x(c, i)), '[]'::jsonb);
END
$$;
