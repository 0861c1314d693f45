-- An event as triggers, wait matches and the wait step's result read it:
-- {"id", "name", "key", "data"}.
CREATE OR REPLACE FUNCTION tasker_event_doc(e events)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('id', e.id, 'name', e.name, 'key', e.key, 'data', e.data)
$$;
