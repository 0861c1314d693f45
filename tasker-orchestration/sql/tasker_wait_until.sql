-- The time a `wait: {until: <pointer>}` step sleeps until: the context's value at `path`, an
-- RFC 3339 timestamp with its offset. NULL for anything else (missing, not a string, no
-- offset, not a date), which the wake fails as `wait_until_invalid` for that step alone.
CREATE OR REPLACE FUNCTION tasker_wait_until(context jsonb, path text[])
RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    v text;
BEGIN
    IF jsonb_typeof(context #> path) IS DISTINCT FROM 'string' THEN
        RETURN NULL;
    END IF;
    v := context #>> path;
    IF v !~ '^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$' THEN
        RETURN NULL;
    END IF;
    RETURN v::timestamptz;
EXCEPTION WHEN others THEN
    -- A well-formed text that is no date (month 13).
    RETURN NULL;
END
$$;
