-- What is wrong with a successful result for a step of this type, as a permanent error
-- ({kind, message}), or NULL if it is usable: a decision must name some of its branches, a
-- batchable step must list its batches. Used for handler results and for results supplied by
-- hand (resolve), so both are held to the same rule.
CREATE OR REPLACE FUNCTION tasker_result_problem(step_type text, branches jsonb, result jsonb)
RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    chosen jsonb := result->'branches';
BEGIN
    IF step_type = 'decision'
       AND (jsonb_typeof(chosen) IS DISTINCT FROM 'array'
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(chosen) c
                       WHERE jsonb_typeof(c) <> 'string' OR NOT (branches ? (c #>> '{}')))) THEN
        RETURN jsonb_build_object('kind', 'invalid_decision',
            'message', format('a decision step must return {"branches": [...]} naming some of %s; got %s',
                              branches, COALESCE(chosen::text, 'no branches')));
    ELSIF step_type = 'batchable' AND jsonb_typeof(result->'batches') IS DISTINCT FROM 'array' THEN
        RETURN jsonb_build_object('kind', 'invalid_batches',
            'message', 'a batchable step must return {"batches": [...]}, one entry per batch');
    END IF;
    RETURN NULL;
END
$$;
