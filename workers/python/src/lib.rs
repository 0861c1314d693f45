//! `tasker._native`: the Python face of [`tasker_worker::EmbeddedWorker`]. Deliberately thin:
//! the core owns every connection and timer; Python only takes batches of jobs and returns
//! outcomes, both as JSON strings (parsed with the standard `json` module on the Python side).
//! Blocking calls release the GIL so handler threads keep running while the dispatcher waits.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use tasker_worker::batch_host::{self, BatchHost};
use tasker_worker::{EmbeddedOptions, EmbeddedWorker, PageError, ParentPages};

create_exception!(
    _native,
    WorkerError,
    PyException,
    "The worker core could not start, or was used after it stopped."
);

create_exception!(
    _native,
    ReferenceUnavailable,
    PyException,
    "A step's parent results could not be read from the orchestrator (retried like any error)."
);

/// A running worker core. `start` connects in the background; `next_batch` hands out jobs.
#[pyclass(module = "tasker._native", name = "Worker", frozen)]
struct Worker {
    /// The queue jobs are taken from; kept outside the lock so waiting never blocks `stop`.
    host: Arc<BatchHost>,
    parent_pages: ParentPages,
    health: String,
    namespaces: Vec<String>,
    concurrency: usize,
    shutdown_timeout: Duration,
    inner: Mutex<Option<EmbeddedWorker>>,
}

impl Worker {
    fn inner(&self) -> MutexGuard<'_, Option<EmbeddedWorker>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Worker {
    /// Loads configuration (file, `DATABASE_URL`/`AMQP_URL`/`TASKER_*`, these arguments) and
    /// the templates, binds `/health` and starts consuming the templates' namespaces.
    #[new]
    #[pyo3(signature = (templates, *, config=None, health_port=None, concurrency=None,
                        orchestrator_url=None, shutdown_timeout=None))]
    fn new(
        py: Python<'_>,
        templates: PathBuf,
        config: Option<PathBuf>,
        health_port: Option<u16>,
        concurrency: Option<usize>,
        orchestrator_url: Option<String>,
        shutdown_timeout: Option<f64>,
    ) -> PyResult<Self> {
        // The core's logs go to Python's `logging` (tasker.logs drains them), not to stderr.
        tasker_worker::forward_logs("info");
        let shutdown_timeout = shutdown_timeout
            .map(|s| {
                Duration::try_from_secs_f64(s).map_err(|_| {
                    PyValueError::new_err(format!(
                        "shutdown_timeout must be a number of seconds, at least 0, not {s}"
                    ))
                })
            })
            .transpose()?;
        let options = EmbeddedOptions {
            templates,
            config_file: config,
            health_port,
            concurrency,
            orchestrator_url,
            shutdown_timeout,
            language: "python",
        };
        let worker = py
            .detach(|| EmbeddedWorker::start(options))
            .map_err(|e| WorkerError::new_err(e.to_string()))?;
        Ok(Worker {
            host: worker.host(),
            parent_pages: worker.parent_pages(),
            health: worker.health_addr().to_string(),
            namespaces: worker.namespaces().to_vec(),
            concurrency: worker.concurrency(),
            shutdown_timeout: worker.shutdown_timeout(),
            inner: Mutex::new(Some(worker)),
        })
    }

    /// Waits up to `timeout_ms` for jobs and returns at most `max` of them as a JSON array
    /// (`"[]"` when the wait ran out or the worker stopped). The GIL is released meanwhile.
    fn next_batch(&self, py: Python<'_>, max: usize, timeout_ms: u64) -> PyResult<String> {
        let host = self.host.clone();
        let jobs = py.detach(move || host.next_batch(max, Duration::from_millis(timeout_ms)));
        serde_json::to_string(&jobs).map_err(|e| WorkerError::new_err(e.to_string()))
    }

    /// Reports outcomes: a JSON array of `{"id", "status": "success", "result"}` or
    /// `{"id", "status": "failure", "retryable", "error": {"kind", "message", "backtrace"}}`.
    /// Keeps the GIL: it only parses them and hands them to the core, without waiting, and
    /// giving the GIL up and taking it back would cost the caller more under load.
    fn complete(&self, outcomes: &str) -> PyResult<()> {
        self.host.complete_json(outcomes).map_err(|e| match e {
            batch_host::Error::InvalidOutcome(_) => PyValueError::new_err(e.to_string()),
            batch_host::Error::Stopped => WorkerError::new_err(e.to_string()),
        })
    }

    /// One page of the parent results of a step whose job says `parent_results_by_reference`:
    /// `(JSON object text, cursor of the next page or None)`. Start with `after=None`. The GIL
    /// is released while the orchestrator answers.
    #[pyo3(signature = (task_id, step_id, after=None))]
    fn parent_results_page(
        &self,
        py: Python<'_>,
        task_id: &str,
        step_id: &str,
        after: Option<&str>,
    ) -> PyResult<(String, Option<String>)> {
        let pages = self.parent_pages.clone();
        let (task, step, after) = (
            task_id.to_owned(),
            step_id.to_owned(),
            after.map(str::to_owned),
        );
        let page = py
            .detach(move || pages.page_blocking(&task, &step, after.as_deref()))
            .map_err(|e| match e {
                PageError::BadId(_) => PyValueError::new_err(e.to_string()),
                PageError::Unavailable(_) => ReferenceUnavailable::new_err(e.to_string()),
                PageError::Stopped => WorkerError::new_err(e.to_string()),
            })?;
        Ok((page.results, page.next))
    }

    /// `ip:port` of the `/health` endpoint.
    #[getter]
    fn health_addr(&self) -> &str {
        &self.health
    }

    /// The namespaces consumed, sorted.
    #[getter]
    fn namespaces(&self) -> Vec<String> {
        self.namespaces.clone()
    }

    /// Steps to run at once (configuration or the `concurrency` argument).
    #[getter]
    fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// Seconds running handlers may take to finish once stopping (`worker.shutdown_timeout_ms`,
    /// the `shutdown_timeout` argument).
    #[getter]
    fn shutdown_timeout(&self) -> f64 {
        self.shutdown_timeout.as_secs_f64()
    }

    /// True once `shutdown` or `stop` ran: `next_batch` then returns at once with no jobs.
    #[getter]
    fn stopped(&self) -> bool {
        self.host.is_stopped()
    }

    /// Begins stopping without blocking: no step is taken or handed out any more and the
    /// shutdown timeout starts; report the running handlers' outcomes, then call `stop`.
    /// Idempotent.
    fn shutdown(&self) {
        if let Some(worker) = self.inner().as_ref() {
            worker.shutdown();
        }
    }

    /// Stops: outcomes reported (and those reported before the shutdown timeout) are
    /// published and their steps acknowledged, then every other step goes back to its queue.
    /// Blocks until then, with the GIL released. Idempotent.
    fn stop(&self, py: Python<'_>) {
        let worker = self.inner().take();
        if let Some(mut worker) = worker {
            py.detach(move || worker.stop());
        }
    }
}

/// Waits up to `timeout_ms` for the worker core's log records and returns at most `max` of them
/// as a JSON array of `{"level", "target", "message"}` (`"[]"` when the wait ran out). The GIL
/// is released meanwhile. `tasker.logs` hands them to `logging`.
#[pyfunction]
fn next_log_records(py: Python<'_>, max: usize, timeout_ms: u64) -> PyResult<String> {
    let queue = tasker_worker::forward_logs("info");
    let records = py.detach(|| queue.next_batch(max, Duration::from_millis(timeout_ms)));
    serde_json::to_string(&records).map_err(|e| WorkerError::new_err(e.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Worker>()?;
    m.add_function(wrap_pyfunction!(next_log_records, m)?)?;
    m.add("WorkerError", m.py().get_type::<WorkerError>())?;
    m.add(
        "ReferenceUnavailable",
        m.py().get_type::<ReferenceUnavailable>(),
    )?;
    Ok(())
}
