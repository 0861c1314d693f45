-- Sharded count-downs for large fan-outs (issue 48). A converging step with a thousand parents
-- or more, and its task, are counted down on tally rows rather than on their own rows: each
-- result-applying session adds the parents it resolved to its own shard (tasker_shard()), so
-- result batches of one fan-out applied at once do not queue behind one row lock until commit.
-- The rows stay authoritative: a step's parents still to resolve are `pending_parents` minus its
-- tallies, a task's open steps `open_steps` minus its tallies. Tallies are folded into the row
-- (tasker_fold_tallies) under the row's lock and every shard's, by whatever needs the exact
-- count: the check after each commit that counted on a tally (tasker_settle), the sweeper, and
-- the engine's less frequent paths (skips, failures, repairs). Rows are created with the fan-out
-- (tasker_insert_batch_workers), one per shard, and deleted when their task completes (or is
-- purged).
CREATE TABLE step_tallies (
    step_id uuid     NOT NULL,
    shard   smallint NOT NULL,
    task_id uuid     NOT NULL,
    n       integer  NOT NULL DEFAULT 0,
    PRIMARY KEY (step_id, shard)
) WITH (fillfactor = 50);
CREATE INDEX step_tallies_by_task ON step_tallies (task_id);

CREATE TABLE task_tallies (
    task_id uuid     NOT NULL,
    shard   smallint NOT NULL,
    n       integer  NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, shard)
) WITH (fillfactor = 50);
