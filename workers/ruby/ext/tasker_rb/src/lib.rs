//! `tasker_rb`: the Ruby binding of the Tasker worker core. It wraps
//! [`tasker_worker::EmbeddedWorker`] as `Tasker::NativeWorker`, method for method (the vocabulary of `tasker_worker::embedded`): the core (AMQP,
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
use std::time::Duration;

#[cfg(feature = "bench")]
mod bench;

use magnus::value::Lazy;
use magnus::{ExceptionClass, Module, Object, RModule, Ruby, function, method};
use tasker_worker::EmbeddedWorker;
use tasker_worker::embedded::{self, Error};

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

fn rb_err(ruby: &Ruby, e: Error) -> magnus::Error {
    let class = match e {
        Error::InvalidArgument(_) => ruby.exception_arg_error(),
        Error::Unavailable(_) => ruby.get_inner(&REFERENCE_UNAVAILABLE),
        Error::Start(_) | Error::Stopped => ruby.get_inner(&WORKER_ERROR),
    };
    magnus::Error::new(class, e.to_string())
}

fn wait(ruby: &Ruby, seconds: f64) -> Result<Duration, magnus::Error> {
    embedded::seconds(seconds, "wait").map_err(|e| rb_err(ruby, e))
}

/// `Tasker::NativeWorker`: a running embedded worker, method for method
/// [`tasker_worker::EmbeddedWorker`].
#[magnus::wrap(class = "Tasker::NativeWorker", free_immediately, size)]
struct NativeWorker(EmbeddedWorker);

impl NativeWorker {
    /// `NativeWorker.start(options_json)`: the schema's `start_options` as JSON.
    fn start(ruby: &Ruby, options: String) -> Result<NativeWorker, magnus::Error> {
        EmbeddedWorker::start("ruby", &options)
            .map(NativeWorker)
            .map_err(|e| rb_err(ruby, e))
    }

    /// `take_steps(max, wait_seconds)`: a JSON array of at most `max` jobs (`[]` when the wait
    /// ran out or the worker is stopping), waiting with the GVL released.
    fn take_steps(
        ruby: &Ruby,
        rb_self: &Self,
        max: usize,
        wait: f64,
    ) -> Result<String, magnus::Error> {
        let wait = self::wait(ruby, wait)?;
        Ok(without_gvl(|| rb_self.0.take_steps(max, wait)).unwrap_or_else(|| "[]".into()))
    }

    /// `take_ready_steps(max)`: the same without waiting.
    fn take_ready_steps(&self, max: usize) -> String {
        self.0.take_ready_steps(max)
    }

    /// `complete(outcomes_json)`.
    fn complete(ruby: &Ruby, rb_self: &Self, outcomes: String) -> Result<(), magnus::Error> {
        rb_self.0.complete(&outcomes).map_err(|e| rb_err(ruby, e))
    }

    /// `heartbeat(job_id)`: whether the job is still this worker's to finish.
    fn heartbeat(&self, job: u64) -> bool {
        self.0.heartbeat(job)
    }

    /// `emit(job_id, topic, payload, text)`: a chunk of the job's stream (`payload` is JSON
    /// text, or the text itself when `text`). Never blocks. `nil` when taken, else the
    /// refusal's `[kind, message]`, which the context raises as Tasker::StreamError.
    fn emit(
        &self,
        job: u64,
        topic: String,
        payload: String,
        text: bool,
    ) -> Option<(String, String)> {
        self.0
            .emit(job, &topic, &payload, text)
            .err()
            .map(|e| (e.kind().to_owned(), e.to_string()))
    }

    /// `parent_results_page(task_id, step_id, after)`: `[json_object_text, next_cursor_or_nil]`;
    /// start with `after = nil`. The GVL is released while the orchestrator answers.
    fn parent_results_page(
        ruby: &Ruby,
        rb_self: &Self,
        task_id: String,
        step_id: String,
        after: Option<String>,
    ) -> Result<(String, Option<String>), magnus::Error> {
        let Some(page) = without_gvl(|| {
            rb_self
                .0
                .parent_results_page(&task_id, &step_id, after.as_deref())
        }) else {
            // Ruby had an interrupt pending (the watchdog's Tasker::TimeoutError, Thread#kill…):
            // raise it, not a stand-in.
            ruby.thread_check_ints()?;
            return Err(magnus::Error::new(
                ruby.get_inner(&REFERENCE_UNAVAILABLE),
                "interrupted before the page was read",
            ));
        };
        let page = page.map_err(|e| rb_err(ruby, e))?;
        Ok((page.results, page.next))
    }

    /// `shutdown`: begins stopping without blocking.
    fn shutdown(&self) {
        self.0.shutdown();
    }

    /// `stop`: stops, publishing what was reported (waits with the GVL released). Idempotent.
    fn stop(&self) {
        // (EmbeddedWorker::stop begins with shutdown, which wakes a thread blocked in
        // take_steps at once.) If Ruby was interrupted before the call, stop with the GVL held: the lesser evil.
        if without_gvl(|| self.0.stop()).is_none() {
            self.0.stop();
        }
    }

    /// Seconds running handlers may take to finish once stopping.
    fn shutdown_timeout(&self) -> f64 {
        self.0.shutdown_timeout().as_secs_f64()
    }

    fn is_stopped(&self) -> bool {
        self.0.is_stopped()
    }

    fn health_addr(&self) -> String {
        self.0.health_addr().to_string()
    }

    fn namespaces(&self) -> Vec<String> {
        self.0.namespaces().to_vec()
    }

    fn concurrency(&self) -> usize {
        self.0.concurrency()
    }
}

/// `NativeWorker.next_log_records(max, wait_seconds)`: a JSON array of at most `max` of the
/// core's log records (`[]` when the wait ran out), waiting with the GVL released.
fn next_log_records(ruby: &Ruby, max: usize, wait: f64) -> Result<String, magnus::Error> {
    let wait = self::wait(ruby, wait)?;
    Ok(without_gvl(|| embedded::next_log_records(max, wait)).unwrap_or_else(|| "[]".into()))
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

/// `NativeWorker.test_job(spec_json)` (`Tasker::Testing`): a handler test's step as JSON to the
/// job a worker would hand out, as JSON; `ArgumentError` names what is wrong with the step.
fn test_job(ruby: &Ruby, spec: String) -> Result<String, magnus::Error> {
    tasker_worker::testing::test_job(&spec)
        .map_err(|e| magnus::Error::new(ruby.exception_arg_error(), e.to_string()))
}

/// `NativeWorker.test_judge(spec_json, outcome_json)`: the handler's encoded outcome for a test
/// step, as the engine reads it, as JSON.
fn test_judge(ruby: &Ruby, spec: String, outcome: String) -> Result<String, magnus::Error> {
    tasker_worker::testing::test_judge(&spec, &outcome)
        .map_err(|e| magnus::Error::new(ruby.exception_arg_error(), e.to_string()))
}

#[magnus::init]
fn init(ruby: &Ruby) -> Result<(), magnus::Error> {
    let tasker = ruby.define_module("Tasker")?;
    tasker.define_error("WorkerError", ruby.exception_standard_error())?;
    Lazy::force(&WORKER_ERROR, ruby);
    let class = tasker.define_class("NativeWorker", ruby.class_object())?;
    class.define_singleton_method("start", function!(NativeWorker::start, 1))?;
    class.define_singleton_method("next_log_records", function!(next_log_records, 2))?;
    class.define_singleton_method("test_job", function!(test_job, 1))?;
    class.define_singleton_method("test_judge", function!(test_judge, 2))?;
    class.define_method("take_steps", method!(NativeWorker::take_steps, 2))?;
    class.define_method(
        "take_ready_steps",
        method!(NativeWorker::take_ready_steps, 1),
    )?;
    class.define_method("complete", method!(NativeWorker::complete, 1))?;
    class.define_method("heartbeat", method!(NativeWorker::heartbeat, 1))?;
    class.define_method("emit", method!(NativeWorker::emit, 4))?;
    class.define_method(
        "parent_results_page",
        method!(NativeWorker::parent_results_page, 3),
    )?;
    class.define_method("shutdown", method!(NativeWorker::shutdown, 0))?;
    class.define_method("stop", method!(NativeWorker::stop, 0))?;
    class.define_method(
        "shutdown_timeout",
        method!(NativeWorker::shutdown_timeout, 0),
    )?;
    class.define_method("stopped?", method!(NativeWorker::is_stopped, 0))?;
    class.define_method("health_addr", method!(NativeWorker::health_addr, 0))?;
    class.define_method("namespaces", method!(NativeWorker::namespaces, 0))?;
    class.define_method("concurrency", method!(NativeWorker::concurrency, 0))?;
    #[cfg(feature = "bench")]
    bench::define(ruby, tasker)?;
    Ok(())
}
