-- What the orchestrator does for steps just enqueued: {messages: [StepMessage], deferred:
-- [step id], waits?, children?}. The steps it holds itself are sorted out first (tasker_hold:
-- their waits begin in this transaction; `waits` and `children` are there only when some
-- are). Of the steps sent to workers, the messages of the first 512, and only the ids of the
-- rest, whose messages it builds page by page after the commit (tasker_step_messages), so a
-- 100,000-step fan-out never becomes one huge value.
CREATE OR REPLACE FUNCTION tasker_dispatched(enqueued uuid[]) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    page constant int := 512;
    h record;
    out jsonb;
BEGIN
    IF COALESCE(cardinality(enqueued), 0) = 0 THEN
        -- A batch that enqueues nothing (a task's last step, a join still waiting) needs no query.
        RETURN jsonb_build_object('messages', '[]'::jsonb, 'deferred', '[]'::jsonb);
    END IF;
    SELECT * INTO h FROM tasker_hold(enqueued);
    out := jsonb_build_object('messages', tasker_step_messages(h.sent[1:page]),
                              'deferred', COALESCE(to_jsonb(h.sent[page + 1:]), '[]'::jsonb));
    RETURN out || tasker_held_answer(h.waits, h.children);
END
$$;
