-- Delay before the next attempt after `failed_attempt` failed (milliseconds). Mirrors
-- tasker_shared::RetryPolicy::delay_after; a test checks that the two agree.
CREATE OR REPLACE FUNCTION tasker_retry_delay_ms(backoff text, base_ms bigint, max_ms bigint, failed_attempt int)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT LEAST(
        CASE backoff
            WHEN 'none' THEN 0::numeric
            WHEN 'linear' THEN base_ms::numeric * GREATEST(failed_attempt, 1)
            ELSE base_ms::numeric * power(2::numeric, LEAST(GREATEST(failed_attempt, 1) - 1, 62))
        END,
        max_ms::numeric)::bigint
$$;
