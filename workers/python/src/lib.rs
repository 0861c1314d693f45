//! `tasker._native`: the Python face of [`tasker_worker::EmbeddedWorker`], method for method
//! (see `tasker_worker::embedded` for the vocabulary every binding shares). It adds only the
//! mapping of errors to Python exceptions and the release of the GIL while the core waits; jobs,
//! outcomes and start options cross as JSON text (`tasker-worker/protocol.schema.json`).

use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use tasker_worker::EmbeddedWorker;
use tasker_worker::embedded::{self, Error};

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

fn py_err(e: Error) -> PyErr {
    match e {
        Error::InvalidArgument(_) => PyValueError::new_err(e.to_string()),
        Error::Unavailable(_) => ReferenceUnavailable::new_err(e.to_string()),
        Error::Start(_) | Error::Stopped => WorkerError::new_err(e.to_string()),
    }
}

fn wait(seconds: f64) -> PyResult<Duration> {
    embedded::seconds(seconds, "wait").map_err(py_err)
}

/// A running worker core: `NativeWorker.start(options_json)`.
#[pyclass(module = "tasker._native", name = "NativeWorker", frozen)]
struct NativeWorker(EmbeddedWorker);

#[pymethods]
impl NativeWorker {
    /// Starts the core from the schema's `start_options` as JSON: loads configuration (file,
    /// `DATABASE_URL`/`AMQP_URL`/`TASKER_*`, the options) and the templates, registers them,
    /// binds `/health` and starts consuming the templates' namespaces.
    #[staticmethod]
    fn start(py: Python<'_>, options: &str) -> PyResult<Self> {
        py.detach(|| EmbeddedWorker::start("python", options))
            .map(NativeWorker)
            .map_err(py_err)
    }

    /// Waits up to `wait` seconds for jobs and returns at most `max` of them as a JSON array
    /// (`"[]"` when the wait ran out or the worker is stopping). The GIL is released meanwhile.
    fn take_steps(&self, py: Python<'_>, max: usize, wait: f64) -> PyResult<String> {
        let wait = self::wait(wait)?;
        Ok(py.detach(|| self.0.take_steps(max, wait)))
    }

    /// At most `max` queued jobs as a JSON array, without waiting.
    fn take_ready_steps(&self, max: usize) -> String {
        self.0.take_ready_steps(max)
    }

    /// Reports a JSON array of outcomes. Keeps the GIL: it only parses them and hands them to
    /// the core, without waiting, and giving the GIL up and taking it back would cost more.
    fn complete(&self, outcomes: &str) -> PyResult<()> {
        self.0.complete(outcomes).map_err(py_err)
    }

    /// Whether the job is still this worker's to finish (handed out, not reported, within its
    /// step's timeout, the worker not stopped).
    fn heartbeat(&self, job: u64) -> bool {
        self.0.heartbeat(job)
    }

    /// A chunk of the job's stream (`ctx.emit`: `payload` is JSON text; `ctx.emit_text`:
    /// the text itself). Never blocks. `None` when taken, else `(kind, message)` of the
    /// refusal, which the context raises as `tasker.StreamError`.
    fn emit(&self, job: u64, topic: &str, payload: &str, text: bool) -> Option<(String, String)> {
        self.0
            .emit(job, topic, payload, text)
            .err()
            .map(|e| (e.kind().to_owned(), e.to_string()))
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
        let page = py
            .detach(|| self.0.parent_results_page(task_id, step_id, after))
            .map_err(py_err)?;
        Ok((page.results, page.next))
    }

    /// `ip:port` of the `/health` endpoint.
    #[getter]
    fn health_addr(&self) -> String {
        self.0.health_addr().to_string()
    }

    /// The namespaces consumed, sorted.
    #[getter]
    fn namespaces(&self) -> Vec<String> {
        self.0.namespaces().to_vec()
    }

    /// Steps to run at once.
    #[getter]
    fn concurrency(&self) -> usize {
        self.0.concurrency()
    }

    /// Seconds running handlers may take to finish once stopping.
    #[getter]
    fn shutdown_timeout(&self) -> f64 {
        self.0.shutdown_timeout().as_secs_f64()
    }

    /// True once `shutdown` or `stop` ran: `take_steps` then returns at once with no jobs.
    #[getter]
    fn stopped(&self) -> bool {
        self.0.is_stopped()
    }

    /// Begins stopping without blocking; report the running handlers' outcomes, then call
    /// `stop`. Idempotent.
    fn shutdown(&self) {
        self.0.shutdown();
    }

    /// Stops, publishing what was reported; every other step goes back to its queue. Blocks
    /// with the GIL released. Idempotent.
    fn stop(&self, py: Python<'_>) {
        py.detach(|| self.0.stop());
    }
}

/// Waits up to `wait` seconds for the core's log records and returns at most `max` of them as
/// a JSON array of `{"level", "target", "message"}`, with the GIL released.
#[pyfunction]
fn next_log_records(py: Python<'_>, max: usize, wait: f64) -> PyResult<String> {
    let wait = self::wait(wait)?;
    Ok(py.detach(|| embedded::next_log_records(max, wait)))
}

/// A handler test's job (`tasker.testing`): the test step as JSON (`tasker_worker::testing`)
/// to the job a worker would hand out, as JSON. `ValueError` names what is wrong with it.
#[pyfunction]
fn test_job(spec: &str) -> PyResult<String> {
    tasker_worker::testing::test_job(spec).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A handler test's outcome as the engine reads it: the test step and the handler's encoded
/// outcome (as `complete` takes it), as JSON.
#[pyfunction]
fn test_judge(spec: &str, outcome: &str) -> PyResult<String> {
    tasker_worker::testing::test_judge(spec, outcome)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeWorker>()?;
    m.add_function(wrap_pyfunction!(next_log_records, m)?)?;
    m.add_function(wrap_pyfunction!(test_job, m)?)?;
    m.add_function(wrap_pyfunction!(test_judge, m)?)?;
    m.add("WorkerError", m.py().get_type::<WorkerError>())?;
    m.add(
        "ReferenceUnavailable",
        m.py().get_type::<ReferenceUnavailable>(),
    )?;
    Ok(())
}
