//! A worker's settings (`[worker]`), the same in every language.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{DEFAULT_PRIORITY_AGING_MS, Error};

/// Settings of a worker (any language).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    /// Folder of the templates whose namespaces this worker serves.
    pub templates: Option<PathBuf>,
    /// Address `/health` and `/metrics` listen on: loopback by default; `0.0.0.0` (or a
    /// machine address) lets a probe from another host reach them.
    pub health_bind: std::net::IpAddr,
    /// Port of the worker's `/health` and `/metrics` (0 picks a free port).
    pub health_port: u16,
    /// Steps run at the same time.
    pub concurrency: usize,
    /// Unacknowledged step messages the broker may push to this worker (each carries up to
    /// `orchestrator.steps_per_message` steps).
    pub prefetch: u16,
    /// Largest handler result, in bytes of JSON: a larger one fails its step, permanently,
    /// with `result_too_large`, instead of being sent.
    pub max_result_bytes: usize,
    /// Most bytes one step attempt may stream (`ctx.emit`, `ctx.emit_text`): past it `emit`
    /// fails and the step fails, permanently, with `stream_too_large` (1 KiB to 1 GiB).
    pub max_stream_bytes: u64,
    /// Name reported with results; defaults to `<host>-<pid>`.
    pub name: Option<String>,
    /// The orchestrator API the worker registers its templates with when it starts.
    pub orchestrator_url: String,
    /// Register the templates at start-up (off: orchestrators' `--templates` must carry them).
    pub register_templates: bool,
    /// API token sent to the orchestrator (template registration, parent-result pages) when it
    /// requires tokens: `write` scope. Best set through `TASKER_WORKER__API_TOKEN`.
    pub api_token: Option<String>,
    /// On SIGTERM (or stop), how long handlers already running may finish and have their
    /// results published before the worker exits; steps not finished by then, and those not
    /// started, go back to their queues. `--shutdown-timeout` (seconds) in every language.
    pub shutdown_timeout_ms: u64,
    /// How often the worker reports itself to the orchestrator (`GET /v1/workers`); it counts
    /// as gone after three heartbeats missed.
    pub heartbeat_ms: u64,
    /// A handler that has run this long is reported to the orchestrator (batched, off the
    /// results path), so its step shows `running` with this worker, not `enqueued`: within
    /// 1.5× this of its start. Shorter steps finish before they would be reported and cost
    /// nothing. 0: never reported.
    pub running_report_ms: u64,
    /// Steps a worker holds start high priority first, then normal, then low; a step goes
    /// ahead of one a level above it once it has waited this much longer (aging), so
    /// low-priority work never starves.
    pub priority_aging_ms: u64,
    /// Slots low-priority steps leave free for normal and high ones (default: an eighth of
    /// `concurrency`): behind a backlog of low work, a normal or high step starts at once
    /// instead of waiting for a low one to end. 0: low work may take every slot.
    pub low_priority_reserve: Option<usize>,
}

impl WorkerConfig {
    /// The worker's own settings are within their bounds.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |key, problem: &str| {
            Err(Error::Invalid {
                key,
                problem: problem.to_owned(),
            })
        };
        if self.concurrency == 0 {
            return invalid("worker.concurrency", "must be at least 1");
        }
        if self
            .low_priority_reserve
            .is_some_and(|r| r >= self.concurrency)
        {
            return invalid(
                "worker.low_priority_reserve",
                "must be less than worker.concurrency (low-priority work needs a slot)",
            );
        }
        if !(1024..=crate::stream::MAX_STREAM_BYTES_CEILING).contains(&self.max_stream_bytes) {
            return invalid(
                "worker.max_stream_bytes",
                "must be 1024 (1 KiB) to 1073741824 (1 GiB)",
            );
        }
        if self.heartbeat_ms < 100 {
            return invalid("worker.heartbeat_ms", "must be at least 100");
        }
        if self.running_report_ms != 0 && self.running_report_ms < 50 {
            return invalid("worker.running_report_ms", "must be 0 (off) or at least 50");
        }
        if !self.orchestrator_url.starts_with("http://")
            && !self.orchestrator_url.starts_with("https://")
        {
            return invalid(
                "worker.orchestrator_url",
                "must start with http:// or https://",
            );
        }
        Ok(())
    }

    /// The most low-priority steps a worker runs at once, if fewer than `concurrency`.
    pub fn low_priority_cap(&self) -> Option<usize> {
        let reserve = self.low_priority_reserve.unwrap_or(self.concurrency / 8);
        (reserve > 0).then(|| self.concurrency.saturating_sub(reserve).max(1))
    }
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            templates: None,
            health_bind: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            health_port: 8100,
            concurrency: 64,
            prefetch: 128,
            max_result_bytes: 4 * 1024 * 1024,
            max_stream_bytes: crate::stream::DEFAULT_MAX_STREAM_BYTES,
            name: None,
            orchestrator_url: "http://127.0.0.1:8080".into(),
            register_templates: true,
            api_token: None,
            shutdown_timeout_ms: 30_000,
            heartbeat_ms: 5_000,
            running_report_ms: 500,
            priority_aging_ms: DEFAULT_PRIORITY_AGING_MS,
            low_priority_reserve: None,
        }
    }
}
