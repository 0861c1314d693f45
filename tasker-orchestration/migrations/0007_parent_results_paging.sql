-- Parent results travel by reference for steps with many parents (a fan-out's convergence
-- step): workers read them page by page, in parent id order, through this index.
CREATE INDEX step_edges_by_child_parent ON step_edges (child_id, parent_id);
DROP INDEX step_edges_by_child;
