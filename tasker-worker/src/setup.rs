//! One worker set-up for every language: configuration (defaults → file → environment → the
//! flags a binary or binding passes), the templates folder and the namespaces it serves. The
//! Rust binary and the embedded (FFI) worker both start from [`Setup::load`].

use std::path::PathBuf;

use figment::providers::Serialized;
use serde::Serialize;

use tasker_shared::Config;
use tasker_shared::template::Loaded;

use crate::worker::WorkerOptions;

/// What the caller's flags or arguments set; `None` keeps the configured value.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    /// TOML configuration file (else `$TASKER_CONFIG`, else none).
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
    /// Folder of the templates whose namespaces the worker consumes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub templates: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// The orchestrator API the templates are registered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestrator_url: Option<String>,
    /// How long running handlers may finish once the worker is told to stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shutdown_timeout_ms: Option<u64>,
    /// The handlers the worker has: it consumes only the namespaces of the steps they run
    /// (`None`: every step's of its templates).
    #[serde(skip)]
    pub handlers: Option<Vec<String>>,
    /// Whether to register the templates with the orchestrator at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub register_templates: Option<bool>,
    /// The broker (`amqp_url`) and queue prefix (`queue_prefix`): a test environment's own.
    #[serde(skip)]
    pub broker: Option<Broker>,
}

/// `amqp_url` and `queue_prefix` given by the caller (a test environment's, docs/testing.md).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Broker {
    pub amqp_url: String,
    pub queue_prefix: String,
}

/// Why a worker could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] tasker_shared::config::Error),
    #[error("template {0}")]
    Template(#[from] tasker_shared::template::Error),
    #[error("no templates folder: pass --templates DIR (or set worker.templates)")]
    NoTemplatesFolder,
    #[error("no templates found in {0}")]
    NoTemplates(String),
}

/// A worker's configuration and what it serves.
#[derive(Debug)]
pub struct Setup {
    pub config: Config,
    pub templates: Vec<Loaded>,
    /// The schedules in `schedules/` folders below the templates folder, registered after
    /// the templates.
    pub schedules: Vec<(PathBuf, tasker_shared::time::ScheduleSpec)>,
    pub namespaces: Vec<String>,
    /// The handlers it has (as the caller said), reported to the workers registry.
    pub handlers: Vec<String>,
    pub options: WorkerOptions,
    /// The `worker.*` keys nobody set (no file, variable or flag): their defaults were used.
    pub defaulted: Defaulted,
}

/// Which of the keys that name another process's address kept their defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct Defaulted {
    /// `worker.health_port` (8100).
    pub health_port: bool,
    /// `worker.orchestrator_url` (`http://127.0.0.1:8080`).
    pub orchestrator_url: bool,
}

#[derive(Serialize)]
struct Layer<'a> {
    worker: &'a Overrides,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    broker: Option<&'a Broker>,
}

impl Setup {
    /// Loads and validates the configuration with `overrides` on top, then the templates.
    pub fn load(overrides: &Overrides) -> Result<Setup, Error> {
        let figment =
            Config::figment(overrides.config_file.as_deref()).merge(Serialized::defaults(Layer {
                worker: overrides,
                broker: overrides.broker.as_ref(),
            }));
        let config = Config::extract(&figment)?;
        // A value's metadata names its provider: the defaults are the serialized `Config`.
        let defaulted = |key: &str| {
            figment
                .find_metadata(key)
                .is_none_or(|m| m.name == std::any::type_name::<Config>())
        };
        let defaulted = Defaulted {
            health_port: defaulted("worker.health_port"),
            orchestrator_url: defaulted("worker.orchestrator_url"),
        };
        let dir = config
            .worker
            .templates
            .clone()
            .ok_or(Error::NoTemplatesFolder)?;
        let templates = tasker_shared::template::load_dir(&dir)?;
        let schedules = tasker_shared::template::load_schedules(&dir)?;
        if templates.is_empty() {
            return Err(Error::NoTemplates(dir.display().to_string()));
        }
        let handlers = overrides.handlers.clone();
        let mut namespaces =
            tasker_shared::template::served_namespaces(&templates, handlers.as_deref());
        if namespaces.is_empty() {
            // None of its templates' steps has a handler here: it still consumes their
            // namespaces, so their steps fail for good (`unknown_handler`) instead of waiting.
            namespaces = tasker_shared::template::namespaces(&templates);
            tracing::warn!(
                ?namespaces,
                "no step of these templates has a handler in this worker"
            );
        }
        let options = WorkerOptions::from_config(&config, namespaces.clone());
        Ok(Setup {
            config,
            templates,
            schedules,
            namespaces,
            handlers: handlers.unwrap_or_default(),
            options,
            defaulted,
        })
    }

    /// Where to serve `/health` and `/metrics`.
    pub fn health_port(&self) -> crate::health::Port {
        crate::health::Port {
            bind: self.config.worker.health_bind,
            port: self.config.worker.health_port,
            defaulted: self.defaulted.health_port,
        }
    }
}

/// Tracing for a worker in `language` (`telemetry.otlp_endpoint`; off without one), as the
/// service `tasker-worker-<language>` unless `telemetry.service_name` names another.
pub(crate) fn telemetry(
    config: &Config,
    language: &str,
) -> Result<tasker_telemetry::Telemetry, tasker_telemetry::Error> {
    let t = &config.telemetry;
    let service = t
        .service_name
        .clone()
        .unwrap_or_else(|| format!("tasker-worker-{language}"));
    tasker_telemetry::init(t.otlp_endpoint.as_deref(), &service)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/task_templates/rust")
    }

    /// What nobody set is told apart from what someone set, even to the default's value.
    #[test]
    fn defaults_are_told_from_values_someone_set() {
        let given = |url: Option<&str>, port: Option<u16>| {
            Setup::load(&Overrides {
                templates: Some(fixtures()),
                orchestrator_url: url.map(str::to_owned),
                health_port: port,
                ..Overrides::default()
            })
            .map(|s| (s.defaulted.orchestrator_url, s.defaulted.health_port))
        };
        let explicit = |var: &str| std::env::var_os(var).is_some();
        if !explicit("TASKER_WORKER__ORCHESTRATOR_URL") && !explicit("TASKER_WORKER__HEALTH_PORT") {
            assert_eq!(given(None, None).unwrap(), (true, true));
        }
        let set = given(Some("http://127.0.0.1:8080"), Some(8100)).unwrap();
        assert_eq!(set, (false, false));
    }
}
