-- What the orchestrator publishes for steps just enqueued: {messages: [StepMessage],
-- deferred: [step id]}, the messages of the first 512 steps and only the ids of the rest, whose
-- messages it builds page by page after the commit (tasker_step_messages), so a 100,000-step
-- fan-out never becomes one huge value.
CREATE OR REPLACE FUNCTION tasker_dispatched(enqueued uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    page constant int := 512;
BEGIN
    IF COALESCE(cardinality(enqueued), 0) = 0 THEN
        -- A batch that enqueues nothing (a task's last step, a join still waiting) needs no query.
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'deferred', '[]'::jsonb);
    END IF;
    RETURN jsonb_build_object('messages', tasker_step_messages(enqueued[1:page]),
                              'deferred', COALESCE(to_jsonb(enqueued[page + 1:]), '[]'::jsonb));
END
$$;
