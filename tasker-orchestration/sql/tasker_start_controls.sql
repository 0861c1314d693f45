-- The start controls of a tasker_create_tasks batch (docs/events.md), before its tasks are
-- inserted. A task with `ttl_ms` has a dedupe window: its idempotency key answers its task for
-- that long, purged or not (task_keys); a key whose window has passed is taken from its old
-- task and starts a new one. A task with `debounce` ({key, period_ms, max_ms?, mode}) is one
-- request of a burst for its template and key (debounces, one row per key, its requests
-- serialized by an advisory lock): the first request of a burst creates the task (`leading`:
-- at once; trailing: `period` later, `scheduled`); while the burst lasts a trailing request
-- replaces the scheduled task's context (and what its limits read of it) and moves its start
-- to `period` after itself, never past `max` after the first; a leading one only extends the
-- burst. Requests of one batch see each other's bursts.
--
-- Returns `tasks`, the batch's tasks to insert (in order; a trailing debounce's with its
-- run_at), `held`: by `n`, the answer of each task not to insert ({created: false, task_id,
-- template_id, context, deduplicated | debounced, until?}), and `starts`: when the scheduled
-- tasks this call made or moved start (for the caller's timer).
CREATE OR REPLACE FUNCTION tasker_start_controls(batch jsonb, v_now timestamptz,
    OUT tasks jsonb, OUT held jsonb, OUT starts jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    t jsonb;
    d jsonb;
    answer jsonb;
    w record;
    dkey text;
    period interval;
    at timestamptz;
    -- Where each burst begun by this batch has its task in `tasks` (0-based), by key.
    mine jsonb := '{}';
    open boolean;
BEGIN
    tasks := '[]';
    held := '{}';
    starts := '[]';
    FOR t IN SELECT e FROM jsonb_array_elements(batch->'tasks') e ORDER BY (e->>'n')::int LOOP
        IF t ? 'ttl_ms' THEN
            answer := tasker_dedupe_window(t->>'namespace', t->>'key', v_now);
            IF answer IS NOT NULL THEN
                held := held || jsonb_build_object(t->>'n', answer);
                CONTINUE;
            END IF;
        ELSIF t ? 'debounce' THEN
            d := t->'debounce';
            dkey := (t->>'template_id') || ':' || (d->>'key');
            period := (d->>'period_ms')::bigint * interval '1 millisecond';
            PERFORM pg_advisory_xact_lock(hashtextextended('tasker_debounce:' || dkey, 0));
            SELECT * INTO w FROM debounces WHERE key = dkey;
            open := FOUND AND v_now < w.until;
            IF open AND w.mode = 'leading' THEN
                open := v_now < w.last_at + w.period_ms * interval '1 millisecond';
            ELSIF open AND NOT mine ? dkey THEN
                -- Open while its task waits to start; locked (steps before their task, as on
                -- every path) so that it cannot start under this request's change.
                PERFORM 1 FROM steps WHERE task_id = w.task_id ORDER BY id FOR UPDATE;
                PERFORM 1 FROM tasks WHERE id = w.task_id AND state = 'scheduled' FOR UPDATE;
                open := FOUND;
            END IF;
            IF open THEN
                UPDATE debounces SET last_at = v_now, requests = requests + 1,
                                     period_ms = (d->>'period_ms')::bigint
                WHERE key = dkey;
                IF w.mode = 'trailing' THEN
                    at := LEAST(v_now + period, w.until);
                    starts := starts || to_jsonb(at);
                    IF mine ? dkey THEN
                        -- Its task is this batch's, not inserted yet: it takes this request's
                        -- context (and whatever else the request made of it).
                        tasks := jsonb_set(tasks, ARRAY[mine->>dkey],
                            t || jsonb_build_object('n', tasks->((mine->>dkey)::int)->'n',
                                                    'id', w.task_id, 'run_at', at));
                    ELSE
                        PERFORM tasker_debounce_join(w.task_id, t,
                                                     batch->'plans'->((t->>'plan')::int), at);
                    END IF;
                END IF;
                held := held || jsonb_build_object(t->>'n', jsonb_build_object(
                    'created', false, 'task_id', w.task_id, 'template_id', t->'template_id',
                    'context', t->'context', 'debounced', true));
                CONTINUE;
            END IF;
            -- A new burst: this request's task is its task.
            INSERT INTO debounces AS b (key, template_id, mode, task_id, first_at, last_at,
                                        until, period_ms, requests)
            VALUES (dkey, (t->>'template_id')::uuid, d->>'mode',
                    (t->>'id')::uuid, v_now, v_now,
                    COALESCE(v_now + (d->>'max_ms')::bigint * interval '1 millisecond',
                             'infinity'),
                    (d->>'period_ms')::bigint, 1)
            ON CONFLICT (key) DO UPDATE
                SET template_id = excluded.template_id, mode = excluded.mode,
                    task_id = excluded.task_id, first_at = excluded.first_at,
                    last_at = excluded.last_at, until = excluded.until,
                    period_ms = excluded.period_ms, requests = 1;
            IF d->>'mode' = 'trailing' THEN
                at := v_now + period;
                starts := starts || to_jsonb(at);
                t := t || jsonb_build_object('run_at', at);
                mine := mine || jsonb_build_object(dkey, jsonb_array_length(tasks));
            END IF;
        END IF;
        tasks := tasks || jsonb_build_array(t);
    END LOOP;
END
$$;
