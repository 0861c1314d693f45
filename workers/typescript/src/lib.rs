//! `tasker-node`: the Node.js face of [`tasker_worker::EmbeddedWorker`], method for method (see
//! `tasker_worker::embedded` for the vocabulary every binding shares, here in camelCase). It adds
//! only the mapping of errors to `Status` codes and Promise-returning waits on napi's runtime;
//! jobs, outcomes and start options cross as JSON text (`tasker-worker/protocol.schema.json`):
//! one `JSON.parse` is cheaper than building objects field by field. Integers beyond ±(2^53 − 1),
//! which a JavaScript number would round, cross as marked strings the JavaScript side turns into
//! `BigInt` and back (`tasker_worker::exact_json`).

use napi::bindgen_prelude::*;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use tasker_worker::EmbeddedWorker;
use tasker_worker::embedded::{self, Error as CoreError};
use tasker_worker::exact_json::{mark_big_integers, unmark_big_integers};

fn napi_err(e: CoreError) -> Error {
    let status = match e {
        CoreError::InvalidArgument(_) => Status::InvalidArg,
        CoreError::Start(_) | CoreError::Unavailable(_) | CoreError::Stopped => {
            Status::GenericFailure
        }
    };
    Error::new(status, e.to_string())
}

fn wait(seconds: f64) -> Result<std::time::Duration> {
    embedded::seconds(seconds, "wait").map_err(napi_err)
}

/// Waits up to `wait` seconds for the worker core's log records and resolves with at most `max`
/// of them as a JSON array of `{level, target, message}` (`[]` when the wait ran out).
#[napi]
pub async fn next_log_records(max: u32, wait: f64) -> Result<String> {
    let wait = self::wait(wait)?;
    Ok(embedded::next_log_records_async(max as usize, wait).await)
}

fn test_err(e: tasker_worker::testing::TestError) -> Error {
    Error::new(Status::InvalidArg, e.to_string())
}

/// A handler test's job (`tasker-workflows/testing`): the test step as JSON to the job a worker
/// would hand out, as JSON. Throws naming what is wrong with the step.
#[napi]
pub fn test_job(spec: String) -> Result<String> {
    tasker_worker::testing::test_job(&unmark_big_integers(&spec))
        .map(mark_big_integers)
        .map_err(test_err)
}

/// A handler's encoded outcome for a test step, as the engine reads it, as JSON.
#[napi]
pub fn test_judge(spec: String, outcome: String) -> Result<String> {
    tasker_worker::testing::test_judge(&unmark_big_integers(&spec), &unmark_big_integers(&outcome))
        .map(mark_big_integers)
        .map_err(test_err)
}

/// One page of a step's parent results.
#[napi(object)]
#[derive(Debug)]
pub struct ParentResultsPage {
    /// A JSON object of step name to result.
    pub results: String,
    /// The cursor of the next page; null after the last.
    pub next: Option<String>,
}

/// A running worker core: `NativeWorker.start(optionsJson)`.
#[napi]
#[derive(Debug)]
pub struct NativeWorker(EmbeddedWorker);

#[napi]
impl NativeWorker {
    /// Starts the core from the schema's `start_options` as JSON (it connects in the
    /// background and serves `/health`). Throws with the reason if the options, configuration
    /// or templates are invalid.
    #[napi(factory)]
    pub fn start(options: String) -> Result<NativeWorker> {
        EmbeddedWorker::start("typescript", &options)
            .map(NativeWorker)
            .map_err(napi_err)
    }

    /// Waits up to `wait` seconds for steps and resolves with a JSON array of at most `max`
    /// jobs (`[]` when the wait ran out or the worker is stopping). The wait runs on napi's
    /// tokio runtime, so the event loop keeps running handlers meanwhile.
    #[napi]
    pub async fn take_steps(&self, max: u32, wait: f64) -> Result<String> {
        let wait = self::wait(wait)?;
        Ok(mark_big_integers(
            self.0.take_steps_async(max as usize, wait).await,
        ))
    }

    /// A JSON array of at most `max` queued jobs, without waiting.
    #[napi]
    pub fn take_ready_steps(&self, max: u32) -> String {
        mark_big_integers(self.0.take_ready_steps(max as usize))
    }

    /// Has `callback` called on the JavaScript thread each time steps are queued for this
    /// worker, and when it stops: the event loop then takes them with `takeReadySteps`. The
    /// core calls it straight from its own thread, where `takeSteps` resolves through a thread
    /// of napi's runtime first. The callback does not keep the process alive. Replaces an
    /// earlier callback.
    #[napi]
    pub fn on_ready(&self, callback: Function<(), ()>) -> Result<()> {
        let tsfn = callback
            .build_threadsafe_function::<()>()
            .weak::<true>()
            .build()?;
        self.0.on_ready(move || {
            tsfn.call((), ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(())
    }

    /// Reports a JSON array of outcomes.
    #[napi]
    pub fn complete(&self, outcomes: String) -> Result<()> {
        self.0
            .complete(&unmark_big_integers(&outcomes))
            .map_err(napi_err)
    }

    /// Whether the job is still this worker's to finish (handed out, not reported, within its
    /// step's timeout, the worker not stopped).
    #[napi]
    pub fn heartbeat(&self, job: i64) -> bool {
        u64::try_from(job).is_ok_and(|job| self.0.heartbeat(job))
    }

    /// A chunk of the job's stream (`payload` is JSON text, or the text itself when `text`).
    /// Never blocks. `null` when taken, else the refusal's `[kind, message]`, which the
    /// context throws as a `StreamError`.
    #[napi]
    pub fn emit(
        &self,
        job: i64,
        topic: String,
        payload: String,
        text: bool,
    ) -> Option<Vec<String>> {
        let Ok(job) = u64::try_from(job) else {
            return Some(vec!["stream_closed".into(), "no such job".into()]);
        };
        self.0
            .emit(job, &topic, &payload, text)
            .err()
            .map(|e| vec![e.kind().to_owned(), e.to_string()])
    }

    /// One page of the parent results of a step whose job says `parent_results_by_reference`;
    /// start with `after` null. Rejects with code `GenericFailure` if the orchestrator cannot
    /// answer or the worker stopped, `InvalidArg` for an id that is not one.
    #[napi]
    pub async fn parent_results_page(
        &self,
        task_id: String,
        step_id: String,
        after: Option<String>,
    ) -> Result<ParentResultsPage> {
        let page = self
            .0
            .parent_results_page_async(&task_id, &step_id, after.as_deref())
            .await
            .map_err(napi_err)?;
        Ok(ParentResultsPage {
            results: mark_big_integers(page.results),
            next: page.next,
        })
    }

    /// `ip:port` of the `/health` endpoint.
    #[napi(getter)]
    pub fn health_addr(&self) -> String {
        self.0.health_addr().to_string()
    }

    /// Namespaces whose queues the worker consumes, sorted.
    #[napi(getter)]
    pub fn namespaces(&self) -> Vec<String> {
        self.0.namespaces().to_vec()
    }

    /// Steps to run at once (from options, configuration or the default).
    #[napi(getter)]
    pub fn concurrency(&self) -> u32 {
        u32::try_from(self.0.concurrency()).unwrap_or(u32::MAX)
    }

    /// Seconds running handlers may take to finish once stopping.
    #[napi(getter)]
    pub fn shutdown_timeout(&self) -> f64 {
        self.0.shutdown_timeout().as_secs_f64()
    }

    /// Whether `shutdown` or `stop` was called.
    #[napi(getter)]
    pub fn stopped(&self) -> bool {
        self.0.is_stopped()
    }

    /// Begins stopping without blocking: no step is taken or handed out any more (a pending
    /// `takeSteps` resolves with `[]`) and the shutdown timeout starts. Report the running
    /// handlers' outcomes, then call `stop`. Idempotent.
    #[napi]
    pub fn shutdown(&self) {
        self.0.shutdown();
    }

    /// Stops: outcomes reported (and those reported before the shutdown timeout) are
    /// published and their steps acknowledged, then every other step goes back to its queue.
    /// Idempotent. Blocks until then.
    #[napi]
    pub fn stop(&self) {
        self.0.stop();
    }
}
