//! The per-hop breakdown of a scenario: mean times from the step timestamps the API reports.

use serde_json::{Value, json};
use uuid::Uuid;

/// Mean per-hop times (ms) of the completed steps of `tasks`, from the timestamps the API
/// reports for each step.
pub(super) async fn hops(client: &tasker_client::Client, tasks: &[Uuid]) -> anyhow::Result<Value> {
    fn gap(
        a: Option<chrono::DateTime<chrono::Utc>>,
        b: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Option<f64> {
        Some((b? - a?).num_microseconds()? as f64 / 1000.0)
    }
    fn mean(v: &[f64]) -> Option<f64> {
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
    let (mut queue, mut handler, mut result, mut total) = (vec![], vec![], vec![], vec![]);
    for &id in tasks {
        let task = client.task(id, None).await?;
        total.extend(task.duration_ms);
        for s in client.steps(id).await? {
            if s.state != "completed" {
                continue;
            }
            queue.extend(gap(s.dispatched_at, s.started_at));
            handler.extend(gap(s.started_at, s.finished_at));
            result.extend(gap(s.finished_at, s.processed_at));
        }
    }
    Ok(json!({
        "queue_wait_ms": mean(&queue), "handler_ms": mean(&handler),
        "result_to_commit_ms": mean(&result), "task_created_to_completed_ms": mean(&total),
    }))
}
