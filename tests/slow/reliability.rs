//! Nothing stalls, nothing is lost. One module per way things go wrong:
//! - `poison`: a result that cannot be applied fails only its own step and goes to the dead
//!   letters while everything else advances; a step whose message is too large fails alone;
//! - `dispatch`: a step that never started survives a worker outage longer than its timeout; a
//!   queue timeout fails a step nobody started; a healthy step running past the visibility
//!   timeout runs once; a step message lost between commit and publish, or returned by the
//!   broker, is sent again; a result batch committed as its broker session ends still sends the
//!   steps it made ready;
//! - `events`: an event batch whose orchestrator is SIGKILLed inside its transaction, or just
//!   after it committed, matches every event exactly once when sent again;
//! - `kills`: an orchestrator killed around a child task's start leaves exactly one child; an
//!   orchestrator and a worker killed in the middle of work under a concurrency limit lose no
//!   task, never let more than the limit run, and leave every slot free; an orchestrator killed
//!   in the middle of a fan-out's count-down leaves every batch counted once and the
//!   convergence step run once;
//! - `purge`: a retention pass over 100,000 old finished tasks killed midway leaves every task
//!   whole or gone, and the next pass takes exactly the old ones beside live work;
//! - `restarts`: forty orchestrator starts under load, a newer build's engine SQL applied in
//!   place every fifth, fail no task;
//! - `streams`: a worker SIGKILLed mid-stream has its step stream again, marked, losing nothing.

#[path = "../common/mod.rs"]
mod common;
#[path = "reliability/dispatch.rs"]
mod dispatch;
#[path = "reliability/events.rs"]
mod events;
#[path = "reliability/kills.rs"]
mod kills;
#[path = "reliability/poison.rs"]
mod poison;
#[path = "reliability/purge.rs"]
mod purge;
#[path = "reliability/restarts.rs"]
mod restarts;
#[path = "reliability/streams.rs"]
mod streams;

use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast;
use uuid::Uuid;

use tasker::{RunningOrchestrator, steps_by_name};
use tasker_client::CreateTask;
use tasker_orchestration::events::Event;

async fn create(o: &RunningOrchestrator, name: &str, value: i64) -> anyhow::Result<Uuid> {
    Ok(o.client
        .create_task(&CreateTask::new("rust_examples", name).context(json!({"value": value})))
        .await?
        .id)
}

async fn step_id(o: &RunningOrchestrator, task: Uuid, name: &str) -> anyhow::Result<Uuid> {
    Ok(steps_by_name(&o.client, task).await?[name].id)
}

/// Moves a step's dispatch an hour back, as if no worker had been up for that long.
async fn backdate(o: &RunningOrchestrator, step: Uuid) -> anyhow::Result<()> {
    sqlx::query("UPDATE steps SET dispatched_at = dispatched_at - interval '1 hour' WHERE id = $1")
        .bind(step)
        .execute(o.shared.store.pool())
        .await?;
    Ok(())
}

/// Waits until the sweeper has completed `n` whole rounds from now.
async fn sweeps(events: &mut broadcast::Receiver<Event>, n: usize) -> anyhow::Result<()> {
    // The round under way when we subscribed may have read the rows before the change.
    for _ in 0..=n {
        tokio::time::timeout(Duration::from_secs(20), async {
            while events.recv().await? != Event::Swept {}
            anyhow::Ok(())
        })
        .await??;
    }
    Ok(())
}
