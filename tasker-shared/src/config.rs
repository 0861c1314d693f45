//! Configuration, merged once in a fixed order and validated once:
//! built-in defaults → TOML file → `DATABASE_URL` / `AMQP_URL` → `TASKER_*` environment →
//! command-line flags (added by each binary with [`Config::figment`] + a merge).
//!
//! `config/tasker.reference.toml` documents every key.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// Everything a Tasker process can be configured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub database_url: String,
    pub amqp_url: String,
    /// Prefix of every queue name; lets several clusters or test runs share a broker.
    pub queue_prefix: String,
    /// PEM file of CA certificates trusted, beside the built-in web roots, for `amqps://`
    /// (orchestrators and workers) and an `https://` orchestrator (workers and clients).
    /// PostgreSQL reads its own from `database_url` (`sslmode=verify-full&sslrootcert=FILE`).
    pub tls_ca_file: Option<PathBuf>,
    pub orchestrator: OrchestratorConfig,
    pub worker: WorkerConfig,
    pub telemetry: TelemetryConfig,
    pub retention: RetentionConfig,
    pub broker: BrokerConfig,
}

/// How long finished tasks are kept (`[retention]`): an orchestrator purges a task this long
/// after it completed, failed or was cancelled, with its steps and history. `"never"` keeps
/// them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Tasks that completed.
    pub complete: String,
    /// Tasks that failed.
    pub error: String,
    /// Tasks that were cancelled.
    pub cancelled: String,
    /// How long a purged task's id is remembered, to answer `410 task_purged` rather than 404.
    pub tombstones: String,
    /// How long the audit log's rows are kept (a row per request that changed something).
    pub audit: String,
    /// How often an orchestrator looks for tasks to purge (one purges at a time cluster-wide).
    pub interval_ms: u64,
    /// Tasks purged per transaction.
    pub batch: usize,
    /// The shortest pause between two full batches.
    pub pause_ms: u64,
    /// The most of its time a purge spends deleting (1 to 100, default 5): after a batch that took `t` it
    /// pauses `t × (100 − busy_percent) / busy_percent` (at least `pause_ms`), so a backlog is
    /// purged beside the load, not ahead of it, however slow the database is at the time.
    pub busy_percent: u8,
}

/// The shortest retention: a task is kept at least an hour after it finished.
pub const MIN_RETENTION: std::time::Duration = std::time::Duration::from_secs(3_600);

impl RetentionConfig {
    /// Each finished state's retention, `None` for `"never"`.
    pub fn policy(&self) -> Result<Vec<(crate::TaskState, Option<std::time::Duration>)>, Error> {
        use crate::TaskState;
        [
            ("retention.complete", TaskState::Complete, &self.complete),
            ("retention.error", TaskState::Error, &self.error),
            ("retention.cancelled", TaskState::Cancelled, &self.cancelled),
        ]
        .into_iter()
        .map(|(key, state, text)| Ok((state, retention(key, text)?)))
        .collect()
    }

    /// How long tombstones are kept, `None` for `"never"`.
    pub fn tombstones(&self) -> Result<Option<std::time::Duration>, Error> {
        retention("retention.tombstones", &self.tombstones)
    }

    /// How long audit rows are kept, `None` for `"never"`.
    pub fn audit(&self) -> Result<Option<std::time::Duration>, Error> {
        retention("retention.audit", &self.audit)
    }
}

/// A retention as configured: `"never"`, or a duration of at least [`MIN_RETENTION`].
fn retention(key: &'static str, text: &str) -> Result<Option<std::time::Duration>, Error> {
    if text.trim() == "never" {
        return Ok(None);
    }
    let d = crate::time::parse_duration(key, text).map_err(|e| Error::Invalid {
        key,
        problem: format!("{} (or \"never\")", e.problem),
    })?;
    if d < MIN_RETENTION {
        return Err(Error::Invalid {
            key,
            problem: format!("must be at least 1h, or \"never\" (got {text:?})"),
        });
    }
    Ok(Some(d))
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            complete: "30d".into(),
            error: "90d".into(),
            cancelled: "30d".into(),
            tombstones: "90d".into(),
            audit: "90d".into(),
            interval_ms: 60_000,
            batch: 200,
            pause_ms: 100,
            busy_percent: 5,
        }
    }
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
    /// further clients wait to be accepted.
    pub max_connections: usize,
    /// A request's headers must arrive within this, and an idle keep-alive connection is closed
    /// after it.
    pub header_timeout_ms: u64,
    /// A request's body must arrive within this (400 `bad_body` otherwise).
    pub body_timeout_ms: u64,
    /// Live event streams (`GET /v1/tasks/{id}/events`) open at once, in all.
    pub max_event_streams: usize,
    /// Live event streams open at once with one token (with tokens required).
    pub max_event_streams_per_token: usize,
    /// Longest `GET /v1/tasks/{id}?wait=` a client may ask for.
    pub max_wait_seconds: u64,
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
    /// The most low-priority steps a worker runs at once, if fewer than `concurrency`.
    pub fn low_priority_cap(&self) -> Option<usize> {
        let reserve = self.low_priority_reserve.unwrap_or(self.concurrency / 8);
        (reserve > 0).then(|| self.concurrency.saturating_sub(reserve).max(1))
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            database_url: "postgres://postgres@127.0.0.1:55432/tasker".into(),
            amqp_url: "amqp://guest:guest@127.0.0.1:55672/%2f".into(),
            queue_prefix: "tasker".into(),
            tls_ca_file: None,
            orchestrator: OrchestratorConfig::default(),
            worker: WorkerConfig::default(),
            telemetry: TelemetryConfig::default(),
            retention: RetentionConfig::default(),
            broker: BrokerConfig::default(),
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
            max_message_bytes: 16 * 1024 * 1024,
            steps_per_message: 32,
            inline_max_bytes: 64 * 1024,
            inline_max_parents: 1_000,
            parent_page_bytes: 4 * 1024 * 1024,
            max_context_bytes: 512 * 1024,
            max_child_depth: crate::compose::DEFAULT_MAX_DEPTH,
            priority_aging_ms: DEFAULT_PRIORITY_AGING_MS,
            publish_timeout_ms: 10_000,
            dispatch_backlog_max: 100_000,
            auth: AuthMode::Tokens,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            metrics_public: false,
            audit_forwarded_for: false,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

/// How much longer a step must have waited to go ahead of one a priority level above it.
pub const DEFAULT_PRIORITY_AGING_MS: u64 = 10_000;

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            templates: None,
            health_bind: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            health_port: 8100,
            concurrency: 64,
            prefetch: 128,
            max_result_bytes: 4 * 1024 * 1024,
            name: None,
            orchestrator_url: "http://127.0.0.1:8080".into(),
            register_templates: true,
            api_token: None,
            shutdown_timeout_ms: 30_000,
            heartbeat_ms: 5_000,
            priority_aging_ms: DEFAULT_PRIORITY_AGING_MS,
            low_priority_reserve: None,
        }
    }
}

/// `<host>-<pid>`: how a process names itself in results and registrations unless configured.
pub fn process_name() -> String {
    format!("{}-{}", host_name(), std::process::id())
}

/// This machine's host name (`localhost` if it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// `url` with `sslmode=require` added when it names a database host that is not on this
/// machine's loopback and says nothing of TLS itself: PostgreSQL's default (`prefer`) falls
/// back to plaintext without a word. `sslmode=verify-full&sslrootcert=…` also checks the server
/// (docs/tls.md); `sslmode=disable` says plaintext on purpose.
pub fn require_tls_off_loopback(url: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let says = query
        .split('&')
        .any(|p| p.starts_with("sslmode=") || p.starts_with("host="));
    let authority = base
        .split_once("://")
        .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""));
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match hostport.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => hostport.split(':').next().unwrap_or(""),
    };
    let local = host.is_empty()
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if says || local {
        return url.to_owned();
    }
    let joiner = if query.is_empty() { "?" } else { "&" };
    format!("{url}{joiner}sslmode=require")
}

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
                            || key.starts_with("worker__")
                            || key.starts_with("telemetry__")
                            || key.starts_with("retention__")
                            || key.starts_with("broker__")
                    })
                    .split("__"),
            )
    }

    /// Extracts and validates.
    pub fn extract(figment: &Figment) -> Result<Config, Error> {
        let mut config: Config = figment.extract().map_err(Box::new)?;
        config.validate()?;
        config.database_url = require_tls_off_loopback(&config.database_url);
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
        self.retention.policy()?;
        self.retention.tombstones()?;
        self.retention.audit()?;
        if self.retention.batch == 0 || self.retention.batch > 10_000 {
            return invalid("retention.batch", "must be 1 to 10000");
        }
        if !(1..=100).contains(&self.retention.busy_percent) {
            return invalid("retention.busy_percent", "must be 1 to 100");
        }
        if self.retention.interval_ms < 1_000 {
            return invalid("retention.interval_ms", "must be at least 1000");
        }
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
        if self.orchestrator.steps_per_message == 0 {
            return invalid("orchestrator.steps_per_message", "must be at least 1");
        }
        if !(1..=100_000).contains(&self.orchestrator.max_batch_tasks) {
            return invalid("orchestrator.max_batch_tasks", "must be 1 to 100000");
        }
        if self.orchestrator.result_batch_max == 0 {
            return invalid("orchestrator.result_batch_max", "must be at least 1");
        }
        if self.orchestrator.db_max_connections < 2 {
            return invalid("orchestrator.db_max_connections", "must be at least 2");
        }
        if self.worker.concurrency == 0 {
            return invalid("worker.concurrency", "must be at least 1");
        }
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
        if self
            .worker
            .low_priority_reserve
            .is_some_and(|r| r >= self.worker.concurrency)
        {
            return invalid(
                "worker.low_priority_reserve",
                "must be less than worker.concurrency (low-priority work needs a slot)",
            );
        }
        if self.worker.heartbeat_ms < 100 {
            return invalid("worker.heartbeat_ms", "must be at least 100");
        }
        if !self.worker.orchestrator_url.starts_with("http://")
            && !self.worker.orchestrator_url.starts_with("https://")
        {
            return invalid(
                "worker.orchestrator_url",
                "must start with http:// or https://",
            );
        }
        if self.worker.prefetch == 0 || self.orchestrator.result_prefetch == 0 {
            return invalid("worker.prefetch", "prefetch values must be at least 1");
        }
        let o = &self.orchestrator;
        match (&o.tls_cert_file, &o.tls_key_file) {
            (Some(_), None) => {
                return invalid("orchestrator.tls_key_file", "is needed with tls_cert_file");
            }
            (None, Some(_)) => {
                return invalid("orchestrator.tls_cert_file", "is needed with tls_key_file");
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
