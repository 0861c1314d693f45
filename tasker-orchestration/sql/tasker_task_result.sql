-- A complete task's result: the results of its completed steps that no completed step depends
-- on, by step name (what `GET /v1/tasks/{id}` answers, and what a child step completes with).
CREATE OR REPLACE FUNCTION tasker_task_result(v_task uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT COALESCE(jsonb_object_agg(s.name, s.result), '{}'::jsonb) FROM steps s
    WHERE s.task_id = v_task AND s.state = 'completed'
      AND NOT EXISTS (SELECT 1 FROM step_edges e JOIN steps c ON c.id = e.child_id
                      WHERE e.parent_id = s.id AND c.state = 'completed')
$$;
