-- The values of `doc` at each of `paths` (a JSON array of paths, each an array of keys), in
-- order, as a JSON array (a path that finds nothing gives null).
CREATE OR REPLACE FUNCTION tasker_event_values(doc jsonb, paths jsonb)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(jsonb_agg(doc #> ARRAY(SELECT jsonb_array_elements_text(p)) ORDER BY o), '[]')
    FROM jsonb_array_elements(paths) WITH ORDINALITY AS x(p, o)
$$;
