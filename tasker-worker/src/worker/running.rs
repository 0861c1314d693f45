//! Running reports: the attempts whose handlers have run for `worker.running_report_ms` go to
//! the orchestrator in one request per round (`POST /v1/workers/{id}/running`), off the results
//! path, so a long step shows `running` with this worker. Best effort: a report that cannot be
//! delivered is kept for the next round (a stale one changes nothing there: the orchestrator
//! marks only attempts still in flight), and an orchestrator without the route (an older
//! release) is not asked again.

use tokio::sync::mpsc;

use tasker_client::{Client, Error};
use tasker_shared::api::{RunningReport, RunningStep};

/// Most attempts kept for a later round while the orchestrator cannot be reached.
const KEPT_MAX: usize = 10_000;

/// Sends each round of attempts handed to the returned channel, until it closes.
pub(super) fn spawn(client: Client, id: uuid::Uuid) -> mpsc::UnboundedSender<Vec<RunningStep>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<RunningStep>>();
    tokio::spawn(async move {
        let mut kept: Vec<RunningStep> = Vec::new();
        let mut failing = false;
        while let Some(round) = rx.recv().await {
            kept.extend(round);
            while let Ok(more) = rx.try_recv() {
                kept.extend(more);
            }
            let report = RunningReport {
                steps: std::mem::take(&mut kept),
            };
            match client.report_running(id, &report).await {
                Ok(recorded) => {
                    if failing {
                        tracing::info!("reporting running steps again");
                        failing = false;
                    }
                    tracing::debug!(
                        reported = report.steps.len(),
                        recorded = recorded.recorded,
                        "running steps reported"
                    );
                }
                // An older orchestrator: it has no such route, nothing will show running.
                Err(Error::Api {
                    status: 404 | 405,
                    ref code,
                    ..
                }) if code != "worker_not_found" => return,
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "cannot report running steps; keeping them for the next round");
                        failing = true;
                    }
                    kept = report.steps;
                    let over = kept.len().saturating_sub(KEPT_MAX);
                    kept.drain(..over);
                }
            }
        }
    });
    tx
}
