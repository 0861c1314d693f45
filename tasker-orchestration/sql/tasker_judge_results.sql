-- Judges a batch of results (a JSON array of tasker_shared::StepResult) against their steps, each
-- of which it locks, in one statement, in the one global order (task, step, attempt) so
-- concurrent orchestrators never deadlock. `permits`, when given, holds one entry per result in
-- the batch's order: NULL when its sender may serve any namespace (the orchestrator itself, a
-- trusted broker user), else a regular expression the namespace of the result's step must match
-- (a worker's broker user: the namespaces of its token).
--
-- A result is accepted only if its task, step and attempt all match one step in flight (enqueued
-- with that attempt) and its sender may serve that step's namespace. A copy of an accepted
-- result, or of the result that settled the attempt the step is at (a redelivery), is ignored.
-- Anything else is rejected with a code — `result_mismatch` (no such step, a step of another
-- task, an attempt the step is not at) or `result_not_permitted` (a namespace its sender may not
-- serve) — and `i`, its 1-based position in the batch. Copies are told apart after judging, so a
-- rejected result never takes the place of an acceptable one.
--
-- Returns the accepted results in lock order (their steps, tasks, attempts, results, and what
-- each is: `success` for a plain success, `decision` or `batchable` for those steps' successes,
-- `failure`), the steps ignored, the rejections [{i, code, detail}], and whether every accepted
-- result is a plain success (the one-statement path).
CREATE OR REPLACE FUNCTION tasker_judge_results(batch jsonb, permits text[],
                                                OUT ids uuid[], OUT task_ids uuid[],
                                                OUT attempts int[], OUT results jsonb[],
                                                OUT kinds text[], OUT ignored uuid[],
                                                OUT rejected jsonb, OUT plain boolean)
LANGUAGE plpgsql
-- Every step is looked up by its id: index lookups whatever the statistics say (a 100,000-step
-- fan-out grows the tables faster than autovacuum re-analyzes them, and this session's plan was
-- made when they were small).
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    WITH judged AS (
        SELECT x.*, s.id AS sid, s.task_id AS stask, s.step_type,
               CASE
                   WHEN s.id IS NULL THEN 'result_mismatch'
                   WHEN s.task_id <> x.task THEN 'result_mismatch'
                   WHEN x.permit IS NOT NULL AND (p.ns IS NULL OR p.ns !~ x.permit)
                       THEN 'result_not_permitted'
                   WHEN x.attempt = s.attempt AND s.state = 'enqueued' THEN 'apply'
                   -- The attempt the step is at, settled already: a copy of its result.
                   WHEN x.attempt = s.attempt THEN 'ignore'
                   ELSE 'result_mismatch'
               END AS verdict,
               CASE
                   WHEN s.id IS NULL THEN format('no step %s', x.step)
                   WHEN s.task_id <> x.task
                       THEN format('step %s is not a step of task %s', x.step, x.task)
                   WHEN x.permit IS NOT NULL AND (p.ns IS NULL OR p.ns !~ x.permit)
                       THEN format('its sender may not serve namespace %s, where step %s of task %s '
                                   'runs; nothing was changed', p.ns, x.step, x.task)
                   ELSE format('attempt %s of step %s is not in flight (the step is at attempt %s, %s)',
                               x.attempt, x.step, s.attempt, s.state)
               END AS detail
        FROM (SELECT e.value AS r, e.i, (e.value->>'step_id')::uuid AS step,
                     (e.value->>'task_id')::uuid AS task, (e.value->>'attempt')::int AS attempt,
                     permits[e.i] AS permit,
                     row_number() OVER (ORDER BY e.value->>'task_id', e.value->>'step_id',
                                                 (e.value->>'attempt')::int, e.i) AS k
              FROM jsonb_array_elements(batch) WITH ORDINALITY AS e(value, i)
              ORDER BY k OFFSET 0) x
        -- By primary key only (OFFSET 0 keeps the other tests out of the lookup): a plan made
        -- while the table was small otherwise went through the index of enqueued steps, reading
        -- all 100,000 of a fan-out's for each result.
        LEFT JOIN LATERAL (SELECT id, task_id, step_type, attempt, state, namespace FROM steps
                           WHERE id = x.step OFFSET 0 FOR UPDATE) s ON true
        -- The namespace the step runs in, looked up only for a sender limited to namespaces.
        LEFT JOIN LATERAL (SELECT COALESCE(s.namespace, t.namespace) AS ns FROM tasks t
                           WHERE x.permit IS NOT NULL AND t.id = s.task_id) p ON true
    ), v AS (
        -- The second copy of an accepted result is ignored: the first settles its attempt.
        SELECT j.*,
               CASE WHEN j.verdict = 'apply'
                         AND row_number() OVER (PARTITION BY j.step, j.attempt, j.verdict = 'apply'
                                                ORDER BY j.i) > 1
                    THEN 'ignore' ELSE j.verdict END AS final
        FROM judged j
    )
    SELECT COALESCE(array_agg(v.sid ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.stask ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.attempt ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.r ORDER BY v.k) FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(CASE WHEN v.r->'outcome'->>'status' <> 'success' THEN 'failure'
                                   WHEN v.step_type IN ('decision', 'batchable') THEN v.step_type
                                   ELSE 'success' END ORDER BY v.k)
                        FILTER (WHERE v.final = 'apply'), '{}'),
           COALESCE(array_agg(v.step ORDER BY v.k) FILTER (WHERE v.final = 'ignore'), '{}'),
           COALESCE(jsonb_agg(jsonb_build_object('i', v.i, 'code', v.final, 'detail', v.detail)
                              ORDER BY v.i)
                        FILTER (WHERE v.final NOT IN ('apply', 'ignore')), '[]'),
           COALESCE(bool_and(v.r->'outcome'->>'status' = 'success'
                             AND v.step_type NOT IN ('decision', 'batchable'))
                        FILTER (WHERE v.final = 'apply'), true)
    INTO ids, task_ids, attempts, results, kinds, ignored, rejected, plain
    FROM v;
END
$$;
