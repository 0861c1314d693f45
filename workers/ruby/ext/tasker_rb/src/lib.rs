//! `tasker_rb`: the Ruby binding of the Tasker worker core. It wraps
//! [`tasker_worker::EmbeddedWorker`] as `Tasker::NativeWorker` and nothing more: the core (AMQP,
//! acks, result publishing, step timeouts, `/health`) runs on its own Rust threads, and Ruby
//! threads take batches of steps and hand back outcomes, both as JSON strings. The handler API,
//! the thread pool and the entry point are Ruby (`workers/ruby/lib/tasker`).
//!
//! Ruby may only be called from threads Ruby created, so no Rust thread here ever touches a Ruby
//! object; the blocking waits run with the GVL released so other Ruby threads keep running.

// `rb_thread_call_without_gvl2` is C and has no safe wrapper in magnus; the one unsafe block
// below is the whole of it.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod bench;

use magnus::value::Lazy;
use magnus::{Error, ExceptionClass, Module, Object, RModule, Ruby, function, method};
use tasker_worker::{
    BatchHost, EmbeddedOptions, EmbeddedWorker, PageError, ParentPages, batch_host,
};

/// `Tasker::WorkerError`: the worker could not start (bad templates, configuration, port) or
/// was given outcomes it cannot read.
static WORKER_ERROR: Lazy<ExceptionClass> = Lazy::new(|ruby| {
    let tasker: RModule = ruby
        .class_object()
        .const_get("Tasker")
        .expect("Tasker is defined by Init_tasker_rb");
    tasker
        .const_get("WorkerError")
        .expect("Tasker::WorkerError is defined by Init_tasker_rb")
});

/// `Tasker::ReferenceUnavailable` (lib/tasker/errors.rb): a step's parent results could not be
/// read from the orchestrator; retried like any error.
static REFERENCE_UNAVAILABLE: Lazy<ExceptionClass> = Lazy::new(|ruby| {
    let tasker: RModule = ruby
        .class_object()
        .const_get("Tasker")
        .expect("Tasker is defined by Init_tasker_rb");
    tasker
        .const_get("ReferenceUnavailable")
        .expect("Tasker::ReferenceUnavailable is defined by lib/tasker/errors.rb")
});

/// `Tasker::NativeWorker`: a running embedded worker.
#[magnus::wrap(class = "Tasker::NativeWorker", free_immediately, size)]
struct NativeWorker {
    /// Taken by `stop`; `None` afterwards.
    worker: Mutex<Option<EmbeddedWorker>>,
    /// Kept apart from `worker` so a blocked `next_batch` never holds the lock `stop` needs.
    host: Arc<BatchHost>,
    parent_pages: ParentPages,
    health: String,
    namespaces: Vec<String>,
    concurrency: usize,
    shutdown_timeout: Duration,
}

impl NativeWorker {
    /// `NativeWorker.start(templates, config_file, health_port, concurrency, orchestrator_url,
    /// shutdown_timeout_seconds)`; `nil` keeps the configured value (file, `TASKER_*`
    /// environment, defaults).
    fn start(
        ruby: &Ruby,
        templates: String,
        config_file: Option<String>,
        health_port: Option<u16>,
        concurrency: Option<usize>,
        orchestrator_url: Option<String>,
        shutdown_timeout: Option<f64>,
    ) -> Result<NativeWorker, Error> {
        // The core's logs go to Tasker.logger (lib/tasker/logs.rb drains them), not to stderr.
        tasker_worker::forward_logs("info");
        let shutdown_timeout = shutdown_timeout
            .map(|s| {
                Duration::try_from_secs_f64(s).map_err(|_| {
                    Error::new(
                        ruby.exception_arg_error(),
                        format!(
                            "shutdown_timeout must be a number of seconds, at least 0, not {s}"
                        ),
                    )
                })
            })
            .transpose()?;
        let options = EmbeddedOptions {
            templates: PathBuf::from(&templates),
            config_file: config_file.map(PathBuf::from),
            health_port,
            concurrency,
            orchestrator_url,
            shutdown_timeout,
            language: "ruby",
        };
        let worker = EmbeddedWorker::start(options).map_err(|e| {
            Error::new(
                ruby.get_inner(&WORKER_ERROR),
                format!("cannot start the worker (templates {templates}): {e}"),
            )
        })?;
        Ok(NativeWorker {
            host: worker.host(),
            parent_pages: worker.parent_pages(),
            health: worker.health_addr().to_string(),
            namespaces: worker.namespaces().to_vec(),
            concurrency: worker.concurrency(),
            shutdown_timeout: worker.shutdown_timeout(),
            worker: Mutex::new(Some(worker)),
        })
    }

    /// Waits up to `timeout_ms` for steps and returns up to `max` of them as a JSON array of
    /// jobs (`[]` when the wait ran out or the worker stopped). The GVL is released meanwhile.
    fn next_batch_json(&self, max: usize, timeout_ms: u64) -> String {
        let host = self.host.clone();
        let timeout = Duration::from_millis(timeout_ms);
        let batch = without_gvl(move || host.next_batch(max, timeout)).unwrap_or_default();
        // JobView holds only strings, numbers, UUIDs and JSON values: serializing cannot fail.
        serde_json::to_string(&batch).expect("a batch serializes to JSON")
    }

    /// Reports outcomes: a JSON array of `{"id", "status": "success", "result"}` or
    /// `{"id", "status": "failure", "retryable", "error": {"kind", "message", "backtrace"}}`.
    fn complete_json(ruby: &Ruby, rb_self: &Self, json: String) -> Result<(), Error> {
        rb_self.host.complete_json(&json).map_err(|e| match e {
            batch_host::Error::InvalidOutcome(_) => {
                Error::new(ruby.exception_arg_error(), e.to_string())
            }
            batch_host::Error::Stopped => Error::new(ruby.get_inner(&WORKER_ERROR), e.to_string()),
        })
    }

    /// One page of the parent results of a step whose job says `parent_results_by_reference`:
    /// `[json_object_text, next_cursor_or_nil]`; start with `after = nil`. The GVL is released
    /// while the orchestrator answers.
    fn parent_results_page(
        ruby: &Ruby,
        rb_self: &Self,
        task_id: String,
        step_id: String,
        after: Option<String>,
    ) -> Result<(String, Option<String>), Error> {
        let pages = rb_self.parent_pages.clone();
        let Some(page) =
            without_gvl(move || pages.page_blocking(&task_id, &step_id, after.as_deref()))
        else {
            // Ruby had an interrupt pending (the watchdog's Tasker::TimeoutError, Thread#kill…):
            // raise it, not a stand-in.
            ruby.thread_check_ints()?;
            return Err(Error::new(
                ruby.get_inner(&REFERENCE_UNAVAILABLE),
                "interrupted before the page was read",
            ));
        };
        let page = page.map_err(|e| match e {
            PageError::BadId(_) => Error::new(ruby.exception_arg_error(), e.to_string()),
            PageError::Unavailable(_) => {
                Error::new(ruby.get_inner(&REFERENCE_UNAVAILABLE), e.to_string())
            }
            PageError::Stopped => Error::new(ruby.get_inner(&WORKER_ERROR), e.to_string()),
        })?;
        Ok((page.results, page.next))
    }

    /// Begins stopping without blocking: no step is taken or handed out any more and the
    /// shutdown timeout starts. Report the running handlers' outcomes, then call `stop`.
    fn shutdown(&self) {
        if let Some(worker) = self
            .worker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            worker.shutdown();
        }
        self.host.stop();
    }

    /// Seconds running handlers may take to finish once stopping.
    fn shutdown_timeout(&self) -> f64 {
        self.shutdown_timeout.as_secs_f64()
    }

    /// Stops: outcomes reported (and those reported before the shutdown timeout) are
    /// published and their steps acknowledged, then every other step goes back to its queue
    /// (waits with the GVL released). Calling it again does nothing.
    fn stop(&self) {
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Wake a dispatcher blocked in next_batch at once, whichever thread it is on.
        self.host.stop();
        if let Some(mut worker) = worker {
            // If Ruby was interrupted before the call, the worker is dropped here, which stops
            // it all the same (with the GVL held, which is then the lesser evil).
            let _ = without_gvl(move || worker.stop());
        }
    }

    fn is_stopped(&self) -> bool {
        self.host.is_stopped()
    }

    fn health_addr(&self) -> String {
        self.health.clone()
    }

    fn namespaces(&self) -> Vec<String> {
        self.namespaces.clone()
    }

    fn concurrency(&self) -> usize {
        self.concurrency
    }
}

/// `NativeWorker.next_log_records_json(max, timeout_ms)`: waits up to `timeout_ms` for the
/// worker core's log records and returns at most `max` as a JSON array of `{"level", "target",
/// "message"}` (`[]` when the wait ran out), with the GVL released.
fn next_log_records_json(max: usize, timeout_ms: u64) -> String {
    let queue = tasker_worker::forward_logs("info");
    let timeout = Duration::from_millis(timeout_ms);
    let records = without_gvl(move || queue.next_batch(max, timeout)).unwrap_or_default();
    serde_json::to_string(&records).expect("log records serialize to JSON")
}

/// Runs `f` with the GVL released. Returns `None` if Ruby had an interrupt pending (a signal,
/// `Thread#raise`, `Thread#kill`) and so did not call `f`: the caller returns normally and Ruby
/// handles the interrupt then. `rb_thread_call_without_gvl2` is used rather than `…_gvl`
/// because the latter may raise right after `f` returns, unwinding through Rust frames.
///
/// No unblocking function is given, so Ruby cannot cut the wait short: callers keep their
/// waits short (the dispatcher waits ≤ 250 ms) and `stop` wakes them through the host.
fn without_gvl<F, R>(f: F) -> Option<R>
where
    F: FnOnce() -> R,
{
    struct Call<F, R> {
        f: Option<F>,
        out: Option<std::thread::Result<R>>,
    }

    unsafe extern "C" fn trampoline<F, R>(data: *mut c_void) -> *mut c_void
    where
        F: FnOnce() -> R,
    {
        // SAFETY: `data` is the `Call` below, alive and exclusively ours for this call.
        let call = unsafe { &mut *data.cast::<Call<F, R>>() };
        if let Some(f) = call.f.take() {
            // A panic must not unwind into C: catch it and resume it on the Ruby side.
            call.out = Some(std::panic::catch_unwind(AssertUnwindSafe(f)));
        }
        std::ptr::null_mut()
    }

    let mut call = Call {
        f: Some(f),
        out: None,
    };
    // SAFETY: the callback only touches `call`, which outlives this blocking call, and calls no
    // Ruby API while the GVL is released.
    unsafe {
        rb_sys::rb_thread_call_without_gvl2(
            Some(trampoline::<F, R>),
            (&raw mut call).cast::<c_void>(),
            None,
            std::ptr::null_mut(),
        );
    }
    match call.out? {
        Ok(r) => Some(r),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), Error> {
    let tasker = ruby.define_module("Tasker")?;
    tasker.define_error("WorkerError", ruby.exception_standard_error())?;
    Lazy::force(&WORKER_ERROR, ruby);
    let class = tasker.define_class("NativeWorker", ruby.class_object())?;
    class.define_singleton_method("start", function!(NativeWorker::start, 6))?;
    class.define_method("next_batch_json", method!(NativeWorker::next_batch_json, 2))?;
    class.define_singleton_method("next_log_records_json", function!(next_log_records_json, 2))?;
    class.define_method("complete_json", method!(NativeWorker::complete_json, 1))?;
    class.define_method(
        "parent_results_page",
        method!(NativeWorker::parent_results_page, 3),
    )?;
    class.define_method("stop", method!(NativeWorker::stop, 0))?;
    class.define_method("shutdown", method!(NativeWorker::shutdown, 0))?;
    class.define_method(
        "shutdown_timeout",
        method!(NativeWorker::shutdown_timeout, 0),
    )?;
    class.define_method("stopped?", method!(NativeWorker::is_stopped, 0))?;
    class.define_method("health_addr", method!(NativeWorker::health_addr, 0))?;
    class.define_method("namespaces", method!(NativeWorker::namespaces, 0))?;
    class.define_method("concurrency", method!(NativeWorker::concurrency, 0))?;

    let bench = tasker.define_class("BenchHost", ruby.class_object())?;
    bench.define_singleton_method("new", function!(bench::BenchHost::new, 1))?;
    bench.define_method("submit", method!(bench::BenchHost::submit, 2))?;
    bench.define_method(
        "wait_completed",
        method!(bench::BenchHost::wait_completed, 2),
    )?;
    bench.define_method(
        "next_batch_json",
        method!(bench::BenchHost::next_batch_json, 2),
    )?;
    bench.define_method("complete_json", method!(bench::BenchHost::complete_json, 1))?;
    bench.define_method("stop", method!(bench::BenchHost::stop, 0))?;
    bench.define_method("concurrency", method!(bench::BenchHost::concurrency, 0))?;
    bench.define_method("health_addr", method!(bench::BenchHost::health_addr, 0))?;
    bench.define_method("namespaces", method!(bench::BenchHost::namespaces, 0))?;
    Ok(())
}
