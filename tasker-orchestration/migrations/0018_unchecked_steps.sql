-- A task's steps and edges are written in the statement that creates the task
-- (tasker_create_tasks; a batch's workers by tasker_expand_batches) and deleted with it by the
-- purge (tasker_purge_tasks), which deletes them explicitly. Their foreign keys looked up and
-- row-locked the task and both ends of every edge on every create: 100,000 look-ups for a bulk
-- create of 10,000 four-step tasks, a third of its time. The writers keep the rule instead,
-- and the tests check it (every step belongs to a task; an edge joins two steps of its task).
ALTER TABLE steps DROP CONSTRAINT steps_task_id_fkey;
ALTER TABLE step_edges
    DROP CONSTRAINT step_edges_parent_id_fkey,
    DROP CONSTRAINT step_edges_child_id_fkey;
