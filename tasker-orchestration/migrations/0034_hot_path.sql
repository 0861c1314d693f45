-- Less PostgreSQL work per step (docs/benchmarks/postgres_per_step.md, proposals 2 and 3).
--
-- Room on each page for the next version of a row: a task's count of open steps changes once
-- per result batch, and a version that changes no indexed column and fits on its page is a
-- HOT update (no index entry, no page move). Applies to pages written from now on; no rewrite.
ALTER TABLE tasks SET (fillfactor = 70);
ALTER TABLE steps SET (fillfactor = 85);

-- Nothing reads transitions by id alone: history, the live view's task version and the purge
-- all go by task (transitions_by_task is (task_id, id)). The primary key cost every
-- transition (2.5 a step) an index entry of its own; its sequence keeps ids unique.
ALTER TABLE transitions DROP CONSTRAINT transitions_pkey;
