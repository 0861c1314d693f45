//! The append-only transition history, written once per transaction with one bulk insert.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use tasker_shared::{StepState, TaskState};

/// Transitions collected during a transaction.
#[derive(Debug, Default)]
pub(super) struct History {
    task_id: Vec<Uuid>,
    step_id: Vec<Option<Uuid>>,
    from: Vec<Option<String>>,
    to: Vec<String>,
    attempt: Vec<Option<i32>>,
    reason: Vec<String>,
}

impl History {
    pub(super) fn task(
        &mut self,
        task_id: Uuid,
        from: Option<TaskState>,
        to: TaskState,
        reason: &str,
    ) {
        self.push(
            task_id,
            None,
            from.map(|s| s.as_str().to_owned()),
            to.as_str(),
            None,
            reason,
        );
    }

    pub(super) fn step(
        &mut self,
        task_id: Uuid,
        step_id: Uuid,
        from: Option<StepState>,
        to: StepState,
        attempt: u32,
        reason: &str,
    ) {
        self.push(
            task_id,
            Some(step_id),
            from.map(|s| s.as_str().to_owned()),
            to.as_str(),
            Some(attempt as i32),
            reason,
        );
    }

    fn push(
        &mut self,
        task_id: Uuid,
        step_id: Option<Uuid>,
        from: Option<String>,
        to: &str,
        attempt: Option<i32>,
        reason: &str,
    ) {
        self.task_id.push(task_id);
        self.step_id.push(step_id);
        self.from.push(from);
        self.to.push(to.to_owned());
        self.attempt.push(attempt);
        self.reason.push(reason.to_owned());
    }

    pub(super) async fn flush(&mut self, tx: &mut Transaction<'_, Postgres>) -> sqlx::Result<()> {
        if self.to.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
             SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int[],
                                  $6::text[])",
        )
        .bind(&self.task_id)
        .bind(&self.step_id)
        .bind(&self.from)
        .bind(&self.to)
        .bind(&self.attempt)
        .bind(&self.reason)
        .execute(&mut **tx)
        .await?;
        *self = History::default();
        Ok(())
    }
}
