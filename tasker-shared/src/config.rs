//! Configuration, merged once in a fixed order and validated once:
//! built-in defaults → TOML file → `DATABASE_URL` / `AMQP_URL` → `TASKER_*` environment →
//! command-line flags (added by each binary with [`Config::figment`] + a merge).
//!
//! `config/tasker.reference.toml` documents every key.

use std::path::{Path, PathBuf};

mod alerts;
mod bounds;
mod database;
mod host;
mod operations;
mod retention;
mod worker;

pub use alerts::AlertsConfig;
pub use database::DatabaseConfig;
pub use host::{host_name, process_name, require_tls_off_loopback};
pub use operations::OperationsConfig;
pub use retention::{MIN_RETENTION, RetentionConfig};
pub use worker::WorkerConfig;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// Everything a Tasker process can be configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub database_url: String,
    pub database: DatabaseConfig,
    pub amqp_url: String,
    /// Prefix of every queue name; lets several clusters or test runs share a broker.
    pub queue_prefix: String,
    /// PEM file of CA certificates trusted for `amqps://` (orchestrators and workers; beside the
    /// built-in web roots) and an `https://` orchestrator (workers and clients; beside the
    /// system's roots).
    /// PostgreSQL reads its own from `database_url` (`sslmode=verify-full&sslrootcert=FILE`).
    pub tls_ca_file: Option<PathBuf>,
    pub orchestrator: OrchestratorConfig,
    pub worker: WorkerConfig,
    pub telemetry: TelemetryConfig,
    pub retention: RetentionConfig,
    pub operations: OperationsConfig,
    pub broker: BrokerConfig,
    pub alerts: AlertsConfig,
}

/// The broker as Tasker uses it (`[broker]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct BrokerConfig {
    /// The type of the queues Tasker declares: `classic` (one node holds each queue) or
    /// `quorum` (replicated over a cluster's nodes: losing a node loses no message).
    pub queue_type: QueueType,
}

/// RabbitMQ's queue types Tasker can declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum QueueType {
    #[default]
    Classic,
    Quorum,
}

impl QueueType {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Classic => "classic",
            QueueType::Quorum => "quorum",
        }
    }
}

/// Distributed tracing (`[telemetry]`), off unless an endpoint is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// OTLP/HTTP endpoint spans are exported to (`http://collector:4318`); unset: no tracing.
    pub otlp_endpoint: Option<String>,
    /// The service name spans carry; by default the program's (`tasker-orchestrator`,
    /// `tasker-worker-python`, …).
    pub service_name: Option<String>,
}

/// Settings of `tasker-orchestrator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OrchestratorConfig {
    /// Address the REST API listens on.
    pub bind: String,
    /// Folders of task templates registered at start-up.
    pub templates: Vec<PathBuf>,
    pub db_max_connections: u32,
    /// Most results applied in one transaction.
    pub result_batch_max: usize,
    /// Unacknowledged result messages the broker may push to one orchestrator (each carries
    /// up to 256 results).
    pub result_prefetch: u16,
    /// Result batches one orchestrator applies at once, each on a connection of its own.
    pub result_appliers: usize,
    /// How often the sweeper looks for lost, overdue and retry-ready steps.
    pub sweep_interval_ms: u64,
    /// A step enqueued this long ago by an orchestrator silent for as long is published again.
    pub visibility_timeout_ms: u64,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Most tasks one `POST /v1/tasks:batch` creates.
    pub max_batch_tasks: usize,
    /// Largest accepted `POST /v1/tasks:batch` body.
    pub max_batch_body_bytes: usize,
    /// Most connections to the API at once (keep it below the process's open-file limit);
    /// one more is answered 503 `too_many_connections` and closed.
    pub max_connections: usize,
    /// A request's headers must arrive within this, and an idle keep-alive connection is closed
    /// after it.
    pub header_timeout_ms: u64,
    /// A request's body must arrive within this (408 `body_too_slow` otherwise).
    pub body_timeout_ms: u64,
    /// Live event streams (`GET /v1/tasks/{id}/events`) open at once, in all.
    pub max_event_streams: usize,
    /// Live event streams open at once with one token (with tokens required).
    pub max_event_streams_per_token: usize,
    /// Longest `GET /v1/tasks/{id}?wait=` a client may ask for.
    pub max_wait_seconds: u64,
    /// A request's body must arrive whole within this, however steadily it comes.
    pub body_deadline_ms: u64,
    /// A request's body must arrive at least this fast on average, from one second after it
    /// starts (0: no minimum): a client trickling bytes is dropped long before the deadline.
    pub body_min_bytes_per_second: u64,
    /// Connections from one address at once (past it: 429 `too_many_connections`).
    pub max_connections_per_peer: usize,
    /// Requests one token has in progress at once (past it: 429 `too_many_requests`).
    pub max_requests_per_token: usize,
    /// Long polls (`GET /v1/tasks/{id}?wait=`) one token holds open at once (past it: 429
    /// `too_many_waits`).
    pub max_waits_per_token: usize,
    /// Longest a registered template may take to parse and check (`POST /v1/templates`); its
    /// parse is stopped then (422 `invalid_template`).
    pub template_parse_budget_ms: u64,
    /// Largest `context` filter of `GET /v1/tasks`, in bytes of JSON (400
    /// `context_filter_too_large`).
    pub max_context_filter_bytes: usize,
    /// Longest a list query may run in PostgreSQL (503 `query_timeout`).
    pub list_timeout_ms: u64,
    /// Schedules one namespace may have (409 `too_many_schedules`).
    pub max_schedules_per_namespace: usize,
    /// Backfills one schedule may start in an hour (429 `too_many_backfills`).
    pub max_backfills_per_hour: u32,
    /// Signals one task may receive (409 `too_many_signals`).
    pub max_signals_per_task: usize,
    /// Largest step message published; a step whose message is larger fails with
    /// `message_too_large` instead of being sent.
    pub max_message_bytes: usize,
    /// Most steps of one namespace carried by one broker message. Steps made ready together
    /// travel together (the broker's cost is per message); a larger ready set is spread over
    /// several messages, so several workers share it.
    pub steps_per_message: usize,
    /// A task context larger than this (bytes of JSON) is not copied into step messages: the
    /// worker core fetches it once per task. The same bound applies to a step's parent results.
    pub inline_max_bytes: usize,
    /// A step with more parents than this (a fan-out's convergence step) receives its parent
    /// results by reference: the worker core reads them page by page.
    pub inline_max_parents: usize,
    /// A page of parent results (`GET /v1/tasks/{id}/steps/{step}/parent_results`) or of a
    /// task's steps (`GET /v1/tasks/{id}/steps`) ends with the result that reaches this many
    /// bytes of JSON, so the orchestrator and the reader hold at most this plus one result per
    /// page, whatever the results.
    pub parent_page_bytes: usize,
    /// Largest task context accepted at task creation, in bytes of JSON.
    pub max_context_bytes: usize,
    /// How deep child workflows may nest: a task nobody started is at depth 0, and a child step
    /// whose child would be deeper fails with `child_depth_exceeded`.
    pub max_child_depth: u32,
    /// How many tasks may be started below one task nobody started (its children, theirs, …):
    /// a child step whose child would pass it fails with `child_budget_exceeded`.
    pub max_child_tasks: u32,
    /// Steps throttled by a concurrency limit start in priority then age order; a step waits
    /// behind one a priority level above it only until it has waited this much longer (aging),
    /// so low-priority work never starves.
    pub priority_aging_ms: u64,
    /// How long to wait for the broker to confirm a publish round before keeping the messages
    /// for later (the broker may be blocking publishers).
    pub publish_timeout_ms: u64,
    /// Step messages kept in memory while the broker is unreachable; past this, the oldest
    /// steps are left to the sweeper, which re-publishes them after the visibility timeout.
    pub dispatch_backlog_max: usize,
    /// Who may use the API: `tokens` (the default: every route but health, readiness and the
    /// dashboard's files needs one) or `off` (no token needed; say it only for an API no one
    /// else can reach). `auto`, an earlier default, means `tokens`. See docs/auth.md.
    pub auth: AuthMode,
    /// Host names the API answers to besides IP addresses and `localhost` (a request naming
    /// another `Host` is refused: DNS rebinding); `"*"` answers to any.
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`https://ops.example.com`) allowed to call the API besides its own
    /// (cross-site requests are refused otherwise).
    pub allowed_origins: Vec<String>,
    /// `/metrics` without a token even when tokens are required (for a scraper that sends none).
    pub metrics_public: bool,
    /// Keep each audited request's `X-Forwarded-For` header beside its peer address. Only
    /// behind a proxy that sets it (anyone else can write anything in it).
    pub audit_forwarded_for: bool,
    /// Log one line per answer (method, path, route, status, milliseconds, peer).
    pub access_log: bool,
    /// Serve the API over TLS (`https://`) with this PEM certificate chain; needs
    /// `tls_key_file`. Unset: plain HTTP.
    pub tls_cert_file: Option<PathBuf>,
    /// The PEM private key of `tls_cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub tls_key_file: Option<PathBuf>,
}

impl OrchestratorConfig {
    /// Whether the API requires tokens: unless `auth = "off"`.
    pub fn tokens_required(&self) -> bool {
        match self.auth {
            AuthMode::Tokens => true,
            AuthMode::Off => false,
        }
    }

    /// Whether `bind` is a loopback address (`127.0.0.1:…`, `[::1]:…`, `localhost:…`); an
    /// address that cannot be read as one is taken as reachable from elsewhere.
    pub fn binds_loopback(&self) -> bool {
        if let Ok(addr) = self.bind.parse::<std::net::SocketAddr>() {
            return addr.ip().is_loopback();
        }
        let host = self
            .bind
            .rsplit_once(':')
            .map_or(self.bind.as_str(), |(h, _)| h);
        host.eq_ignore_ascii_case("localhost")
    }
}

/// [`OrchestratorConfig::auth`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Tokens required (`auto`, the default of earlier releases, reads as this).
    #[default]
    #[serde(alias = "auto")]
    Tokens,
    Off,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            database_url: "postgres://postgres@127.0.0.1:55432/tasker".into(),
            database: DatabaseConfig::default(),
            amqp_url: "amqp://guest:guest@127.0.0.1:55672/%2f".into(),
            queue_prefix: "tasker".into(),
            tls_ca_file: None,
            orchestrator: OrchestratorConfig::default(),
            worker: WorkerConfig::default(),
            telemetry: TelemetryConfig::default(),
            retention: RetentionConfig::default(),
            operations: OperationsConfig::default(),
            broker: BrokerConfig::default(),
            alerts: AlertsConfig::default(),
        }
    }
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1:8080".into(),
            templates: Vec::new(),
            db_max_connections: 16,
            result_batch_max: 256,
            result_prefetch: 64,
            result_appliers: 2,
            sweep_interval_ms: 1_000,
            visibility_timeout_ms: 30_000,
            max_body_bytes: 1024 * 1024,
            max_batch_tasks: 10_000,
            max_batch_body_bytes: 32 * 1024 * 1024,
            max_connections: 2_048,
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            max_event_streams: 1_024,
            max_event_streams_per_token: 64,
            max_wait_seconds: 300,
            body_deadline_ms: 60_000,
            body_min_bytes_per_second: 1_024,
            max_connections_per_peer: 512,
            max_requests_per_token: 256,
            max_waits_per_token: 128,
            template_parse_budget_ms: 2_000,
            max_context_filter_bytes: 8_192,
            list_timeout_ms: 5_000,
            max_schedules_per_namespace: 1_000,
            max_backfills_per_hour: 10,
            max_signals_per_task: 1_000,
            max_message_bytes: 16 * 1024 * 1024,
            steps_per_message: 32,
            inline_max_bytes: 64 * 1024,
            inline_max_parents: 1_000,
            parent_page_bytes: 4 * 1024 * 1024,
            max_context_bytes: 512 * 1024,
            max_child_depth: crate::compose::DEFAULT_MAX_DEPTH,
            max_child_tasks: crate::compose::DEFAULT_MAX_CHILD_TASKS,
            priority_aging_ms: DEFAULT_PRIORITY_AGING_MS,
            publish_timeout_ms: 10_000,
            dispatch_backlog_max: 100_000,
            auth: AuthMode::Tokens,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            metrics_public: false,
            audit_forwarded_for: false,
            access_log: false,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

/// How much longer a step must have waited to go ahead of one a priority level above it.
pub const DEFAULT_PRIORITY_AGING_MS: u64 = 10_000;

/// A configuration that failed to load or validate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    #[error("configuration: `{key}` {problem}")]
    Invalid { key: &'static str, problem: String },
}

impl Config {
    /// Defaults, then `file` (or `$TASKER_CONFIG`), then the environment. A binary merges its
    /// command-line flags on top and calls [`Config::extract`].
    pub fn figment(file: Option<&Path>) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("TASKER_CONFIG").map(PathBuf::from));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment
            .merge(Env::raw().only(&["DATABASE_URL", "AMQP_URL"]))
            .merge(
                Env::prefixed("TASKER_")
                    .filter(|key| {
                        // Only configuration keys: scripts use other TASKER_* variables
                        // (TASKER_HOME, TASKER_URL, ports) for their own purposes.
                        let key = key.as_str().to_ascii_lowercase();
                        matches!(
                            key.as_str(),
                            "database_url" | "amqp_url" | "queue_prefix" | "tls_ca_file"
                        ) || key.starts_with("orchestrator__")
                            || key.starts_with("database__")
                            || key.starts_with("worker__")
                            || key.starts_with("telemetry__")
                            || key.starts_with("retention__")
                            || key.starts_with("operations__")
                            || key.starts_with("broker__")
                            || key.starts_with("alerts__")
                    })
                    .split("__"),
            )
    }

    /// Extracts and validates.
    pub fn extract(figment: &Figment) -> Result<Config, Error> {
        let mut config: Config = figment.extract().map_err(Box::new)?;
        config.validate()?;
        config.database_url = require_tls_off_loopback(&config.database_url);
        config.database = config.database.normalized();
        Ok(config)
    }

    /// [`Config::figment`] + [`Config::extract`], for callers with no flags of their own.
    pub fn load(file: Option<&Path>) -> Result<Config, Error> {
        Self::extract(&Self::figment(file))
    }

    /// The broker nodes `amqp_url` lists (separated by commas), in the order tried.
    pub fn amqp_urls(&self) -> impl Iterator<Item = &str> {
        self.amqp_url
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
    }

    fn validate(&self) -> Result<(), Error> {
        let invalid = |key, problem: &str| {
            Err(Error::Invalid {
                key,
                problem: problem.to_owned(),
            })
        };
        if !self.database_url.starts_with("postgres://")
            && !self.database_url.starts_with("postgresql://")
        {
            return invalid(
                "database_url",
                "must start with postgres:// or postgresql://",
            );
        }
        if self
            .amqp_urls()
            .any(|u| !u.starts_with("amqp://") && !u.starts_with("amqps://"))
        {
            return invalid(
                "amqp_url",
                "must start with amqp:// or amqps:// (several nodes: separated by commas)",
            );
        }
        self.database.validate()?;
        self.retention.validate()?;
        self.operations.validate()?;
        self.alerts.validate()?;
        if self.queue_prefix.is_empty()
            || !self
                .queue_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return invalid(
                "queue_prefix",
                "must be non-empty ASCII letters, digits, `_`, `-` or `.`",
            );
        }
        if !(1..=100_000).contains(&self.orchestrator.max_batch_tasks) {
            return invalid("orchestrator.max_batch_tasks", "must be 1 to 100000");
        }
        if self.orchestrator.db_max_connections < 2 {
            return invalid("orchestrator.db_max_connections", "must be at least 2");
        }
        self.worker.validate()?;
        for (field, aging) in [
            (
                "orchestrator.priority_aging_ms",
                self.orchestrator.priority_aging_ms,
            ),
            ("worker.priority_aging_ms", self.worker.priority_aging_ms),
        ] {
            if aging > 86_400_000 {
                return invalid(field, "must be at most 86400000 (a day)");
            }
        }
        if self.worker.prefetch == 0 || self.orchestrator.result_prefetch == 0 {
            return invalid("worker.prefetch", "prefetch values must be at least 1");
        }
        bounds::validate(&self.orchestrator)?;
        self.validate_tls()
    }

    /// The TLS files named are usable, and the API's certificate comes with its key.
    fn validate_tls(&self) -> Result<(), Error> {
        let o = &self.orchestrator;
        match (&o.tls_cert_file, &o.tls_key_file) {
            (Some(_), None) => {
                return Err(Error::Invalid {
                    key: "orchestrator.tls_key_file",
                    problem: "is needed with tls_cert_file".into(),
                });
            }
            (None, Some(_)) => {
                return Err(Error::Invalid {
                    key: "orchestrator.tls_cert_file",
                    problem: "is needed with tls_key_file".into(),
                });
            }
            _ => {}
        }
        let named = |key| {
            move |problem| Error::Invalid {
                key,
                problem: format!("is unusable: {problem}"),
            }
        };
        if let Some(file) = &self.tls_ca_file {
            crate::tls::certificates(file).map_err(named("tls_ca_file"))?;
        }
        if let (Some(cert), Some(key)) = (&o.tls_cert_file, &o.tls_key_file) {
            crate::tls::certificates(cert).map_err(named("orchestrator.tls_cert_file"))?;
            crate::tls::private_key(key).map_err(named("orchestrator.tls_key_file"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
// figment's Jail closures return figment's own (large) error type.
#[allow(clippy::result_large_err)]
mod tests;
