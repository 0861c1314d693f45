-- The vocabulary as domains instead of table CHECK constraints (same names allowed, same
-- SQLSTATE 23514 for any other).
--
-- Why: PostgreSQL 15 rebuilds a table's CHECK constraints from their stored node trees for
-- every statement that writes the table (ExecRelCheck parses each `ccbin` and plans it again),
-- and the vocabulary lists were most of that text (~10 kB on steps and transitions). Every
-- result batch writes those tables several times: applying a one-result batch took 12% less
-- with domains. A domain's constraints are compiled once per connection (the type cache) and
-- checked only where a value is assigned to the column.
--
-- No table is rewritten: each domain is created empty, the columns change to it (text to a
-- domain over text is binary compatible, indexes are kept), and only then are the
-- constraints added, which checks the rows already there. The numeric bounds stay table
-- constraints (small; they were not the cost). A transition's states are now checked against
-- the task and step vocabularies together rather than each by its kind of row (only the
-- engine's functions write transitions; tests/engine.rs drives each of them).

CREATE DOMAIN tasker_task_state AS text;
CREATE DOMAIN tasker_step_state AS text;
CREATE DOMAIN tasker_state AS text;
CREATE DOMAIN tasker_step_type AS text;
CREATE DOMAIN tasker_backoff AS text;
CREATE DOMAIN tasker_failure_policy AS text;

ALTER TABLE tasks
    DROP CONSTRAINT tasks_state_check,
    ALTER COLUMN state TYPE tasker_task_state;

ALTER TABLE steps
    DROP CONSTRAINT steps_state_check,
    DROP CONSTRAINT steps_step_type_check,
    DROP CONSTRAINT steps_backoff_check,
    DROP CONSTRAINT steps_on_failure_check,
    ALTER COLUMN state TYPE tasker_step_state,
    ALTER COLUMN step_type TYPE tasker_step_type,
    ALTER COLUMN backoff TYPE tasker_backoff,
    ALTER COLUMN on_failure TYPE tasker_failure_policy;

ALTER TABLE transitions
    DROP CONSTRAINT transitions_states_check,
    ALTER COLUMN from_state TYPE tasker_state,
    ALTER COLUMN to_state TYPE tasker_state;

ALTER DOMAIN tasker_task_state
    ADD CONSTRAINT tasker_task_state_names
        CHECK (VALUE IN ('running', 'complete', 'error', 'cancelled'));
ALTER DOMAIN tasker_step_state
    ADD CONSTRAINT tasker_step_state_names
        CHECK (VALUE IN ('pending', 'enqueued', 'waiting_retry', 'completed', 'failed',
                         'skipped', 'cancelled'));
ALTER DOMAIN tasker_state
    ADD CONSTRAINT tasker_state_names
        CHECK (VALUE IN ('running', 'complete', 'error', 'cancelled', 'pending', 'enqueued',
                         'waiting_retry', 'completed', 'failed', 'skipped'));
ALTER DOMAIN tasker_step_type
    ADD CONSTRAINT tasker_step_type_names
        CHECK (VALUE IN ('standard', 'decision', 'convergence', 'batchable', 'batch_worker'));
ALTER DOMAIN tasker_backoff
    ADD CONSTRAINT tasker_backoff_names
        CHECK (VALUE IN ('none', 'linear', 'exponential'));
ALTER DOMAIN tasker_failure_policy
    ADD CONSTRAINT tasker_failure_policy_names
        CHECK (VALUE IN ('fail_task', 'continue'));
