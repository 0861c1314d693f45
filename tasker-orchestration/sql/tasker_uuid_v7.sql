-- A UUID v7 (time-ordered, like the ids Rust generates): a random v4 whose first 48 bits become
-- the Unix time in milliseconds and whose version nibble becomes 7.
CREATE OR REPLACE FUNCTION tasker_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;
