//! The worker in the orchestrator's workers registry (`GET /v1/workers`, `tasker workers`): it
//! reports who it is and what it serves when it starts and every `worker.heartbeat_ms`, and
//! says it leaves when it stops. The registry is for people and for flagging steps no worker
//! serves; steps flow without it, so an orchestrator that cannot be reached only delays the
//! report.

use std::time::Duration;

use tasker_shared::api::WorkerReport;
use tokio_util::sync::CancellationToken;

use crate::setup::Setup;

/// Reports the worker until `stop` fires, then says it leaves. Runs on the current runtime.
pub fn spawn(setup: &Setup, language: &str, concurrency: usize, stop: &CancellationToken) {
    let client = setup.options.orchestrator_client();
    let id = setup.options.id;
    let every = Duration::from_millis(setup.config.worker.heartbeat_ms);
    let report = WorkerReport {
        name: setup.options.name.clone(),
        language: language.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        host: tasker_shared::config::host_name(),
        pid: i64::from(std::process::id()),
        namespaces: setup.namespaces.clone(),
        handlers: setup.handlers.clone(),
        concurrency: i32::try_from(concurrency).unwrap_or(i32::MAX),
        heartbeat_ms: i32::try_from(every.as_millis()).unwrap_or(i32::MAX),
        started_at: chrono::Utc::now(),
    };
    let stop = stop.clone();
    let (url, defaulted) = (
        setup.config.worker.orchestrator_url.clone(),
        setup.defaulted.orchestrator_url,
    );
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            match client.report_worker(id, &report).await {
                Ok(_) if failing => {
                    tracing::info!("reporting to the workers registry again");
                    failing = false;
                }
                Ok(_) => {}
                // An orchestrator without the registry (an older release): nothing to report to.
                Err(tasker_client::Error::Api {
                    status: 404 | 405, ..
                }) => return,
                Err(e) if !failing => {
                    let hint = match &e {
                        tasker_client::Error::Api { status, .. } => {
                            crate::registration::hint(*status, &url, defaulted)
                        }
                        _ => String::new(),
                    };
                    tracing::warn!(error = %e, "cannot report to the workers registry; retrying every heartbeat{hint}");
                    failing = true;
                }
                Err(_) => {}
            }
            tokio::select! {
                () = stop.cancelled() => break,
                () = tokio::time::sleep(every) => {}
            }
        }
        let leave = tokio::time::timeout(Duration::from_secs(2), client.leave_worker(id));
        if let Ok(Err(e)) = leave.await {
            tracing::debug!(error = %e, "could not tell the workers registry this worker left");
        }
    });
}
