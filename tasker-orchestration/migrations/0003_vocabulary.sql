-- The schema enforces Tasker's vocabulary: every state, step type, backoff and failure policy
-- column accepts only the names tasker_shared defines (StepState, TaskState, StepType, Backoff,
-- FailurePolicy); `tests/engine.rs` compares these lists with the Rust enums.
--
-- From this migration on, the engine's functions live in `tasker-orchestration/sql/`, one file
-- per function, applied with CREATE OR REPLACE after the migrations on every start; migrations
-- only change the schema, and a released migration is never edited (`migrations.lock`).

ALTER TABLE tasks
    ADD CONSTRAINT tasks_state_check
        CHECK (state IN ('running', 'complete', 'error', 'cancelled'));

ALTER TABLE steps
    ADD CONSTRAINT steps_state_check
        CHECK (state IN ('pending', 'enqueued', 'waiting_retry', 'completed', 'failed',
                         'skipped', 'cancelled')),
    ADD CONSTRAINT steps_step_type_check
        CHECK (step_type IN ('standard', 'decision', 'convergence', 'batchable', 'batch_worker')),
    ADD CONSTRAINT steps_backoff_check
        CHECK (backoff IN ('none', 'linear', 'exponential')),
    ADD CONSTRAINT steps_on_failure_check
        CHECK (on_failure IN ('fail_task', 'continue')),
    ADD CONSTRAINT steps_bounds_check
        CHECK (attempt >= 0 AND max_attempts >= 1 AND base_ms >= 0 AND max_ms >= 0
               AND timeout_ms >= 0 AND parent_count >= 0);

-- A transition names task states (task rows) or step states (step rows).
ALTER TABLE transitions
    ADD CONSTRAINT transitions_states_check
        CHECK (CASE WHEN step_id IS NULL
                    THEN to_state IN ('running', 'complete', 'error', 'cancelled')
                         AND (from_state IS NULL
                              OR from_state IN ('running', 'complete', 'error', 'cancelled'))
                    ELSE to_state IN ('pending', 'enqueued', 'waiting_retry', 'completed',
                                      'failed', 'skipped', 'cancelled')
                         AND (from_state IS NULL
                              OR from_state IN ('pending', 'enqueued', 'waiting_retry',
                                                'completed', 'failed', 'skipped', 'cancelled'))
               END);
