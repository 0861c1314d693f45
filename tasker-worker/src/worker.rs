//! The worker service: consumes its namespaces' step queues, hands steps to the host in
//! batches, publishes results with publisher confirms (a batch per confirm round, packed into
//! as few messages as fit), then acks the step messages. One step message may carry many
//! steps; it is acknowledged only after the result of every step it carried is confirmed, so a
//! worker that dies mid-step has its steps redelivered by the broker.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::time::{DelayQueue, delay_queue};

use tasker_broker::{
    BasicAckOptions, BasicNackOptions, Broker, DeadLetters, Delivery, Outgoing, Publisher, Stopper,
    Supervisor, next_batch, supervisor, topology,
};
use tasker_client::{Client, ClientOptions};
use tasker_shared::message::{decode_batch, pack_batches};
use tasker_shared::{Config, Outcome, StepError, StepMessage, StepResult};
use tasker_telemetry::{Span, attr};

use crate::metrics as m;

use crate::host::{Completion, CompletionSink, HandlerHost, Job, Report, timed_out};
use crate::references::{ParentSource, References};

/// Most step messages taken from the broker at once, and results per confirm round.
const BATCH_MAX: usize = 256;

/// Most bytes of one result message (a result larger than this travels alone).
const RESULT_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Result rounds sent and not yet confirmed, at most (more results wait and go out together).
const ROUNDS_IN_FLIGHT: usize = 16;

/// However late the last handler finishes, its results get this long to be confirmed.
const FLUSH_AT_LEAST: Duration = Duration::from_secs(5);

/// How a worker connects and what it consumes.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    pub amqp_url: String,
    pub queue_prefix: String,
    /// Namespaces whose step queues this worker consumes.
    pub namespaces: Vec<String>,
    pub prefetch: u16,
    /// Reported with every result.
    pub name: String,
    /// Where contexts and parent results carried by reference are fetched from.
    pub orchestrator_url: String,
    /// Sent to an orchestrator that requires API tokens.
    pub api_token: Option<String>,
    /// Largest handler result sent, in bytes of JSON.
    pub max_result_bytes: usize,
    /// CA certificates trusted for `amqps://` and an `https://` orchestrator ([`Config::tls_ca_file`]).
    pub tls_ca_file: Option<std::path::PathBuf>,
    /// On stop, how long running handlers may finish and have their results published.
    pub shutdown_timeout: Duration,
}

impl WorkerOptions {
    /// Options from configuration, for the given namespaces.
    pub fn from_config(config: &Config, namespaces: Vec<String>) -> Self {
        let name = config
            .worker
            .name
            .clone()
            .unwrap_or_else(tasker_shared::config::process_name);
        Self {
            amqp_url: config.amqp_url.clone(),
            queue_prefix: config.queue_prefix.clone(),
            namespaces,
            prefetch: config.worker.prefetch,
            name,
            orchestrator_url: config.worker.orchestrator_url.clone(),
            api_token: config.worker.api_token.clone(),
            max_result_bytes: config.worker.max_result_bytes,
            tls_ca_file: config.tls_ca_file.clone(),
            shutdown_timeout: Duration::from_millis(config.worker.shutdown_timeout_ms),
        }
    }

    /// A client of the orchestrator with this worker's token and CA file. The configuration
    /// checked the CA file at start; should it have become unreadable since, the client trusts
    /// the system's roots only, and the reason is logged.
    pub fn orchestrator_client(&self) -> Client {
        let options = ClientOptions {
            token: self.api_token.clone(),
            tls_ca_file: self.tls_ca_file.clone(),
        };
        Client::with_options(&self.orchestrator_url, &options).unwrap_or_else(|e| {
            tracing::error!(error = %e, "worker.tls_ca_file: trusting the system's roots only");
            Client::with_token(&self.orchestrator_url, self.api_token.as_deref())
        })
    }
}

/// Counters for health and tests.
#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub connected: AtomicBool,
    pub received: AtomicU64,
    pub succeeded: AtomicU64,
    pub failed: AtomicU64,
    pub in_flight: AtomicU64,
    /// Steps whose handler is running now (in flight and started).
    pub running: AtomicU64,
    pub malformed: AtomicU64,
}

/// A worker; `run` it until cancelled.
#[derive(Clone)]
pub struct Worker {
    options: WorkerOptions,
    host: Arc<dyn HandlerHost>,
    stats: Arc<Stats>,
    references: Arc<References>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("options", &self.options)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Worker {
    pub fn new(options: WorkerOptions, host: Arc<dyn HandlerHost>) -> Self {
        Self {
            references: Arc::new(References::new(options.orchestrator_client())),
            options,
            host,
            stats: Arc::new(Stats::default()),
        }
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Where this worker reads what step messages carry by reference.
    pub fn references(&self) -> Arc<References> {
        self.references.clone()
    }

    pub fn options(&self) -> &WorkerOptions {
        &self.options
    }

    /// Consumes until `cancel` fires, reconnecting after a lost broker connection.
    pub async fn run(&self, cancel: CancellationToken) {
        Supervisor::new("worker broker session", supervisor::Options::default())
            .run(&cancel, || async {
                let ended = self.session(&cancel).await;
                self.stats.connected.store(false, Ordering::Relaxed);
                self.stats.in_flight.store(0, Ordering::Relaxed);
                self.stats.running.store(0, Ordering::Relaxed);
                ended
            })
            .await;
    }

    async fn connect(&self) -> Result<Broker, tasker_broker::Error> {
        let o = &self.options;
        Broker::connect_with(
            &o.amqp_url,
            &o.queue_prefix,
            &format!("tasker-worker-{}", o.name),
            o.tls_ca_file.as_deref(),
        )
        .await
    }

    /// Checks, once at start, that the broker lets this worker's user read each of its
    /// namespaces' step queues: a worker whose credentials do not cover one of its templates'
    /// namespaces refuses to start ([`tasker_broker::Error::Refused`], naming the queue)
    /// instead of retrying forever. A broker that cannot be reached, or a queue no orchestrator
    /// has declared yet, does not stop it (it keeps trying, as it would anyway).
    pub async fn check_access(&self) -> Result<(), tasker_broker::Error> {
        let broker = match self.connect().await {
            Ok(b) => b,
            Err(e) if e.is_refused() => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "cannot reach the broker yet; starting anyway");
                return Ok(());
            }
        };
        let checked = self.check_queues(&broker).await;
        broker.close().await;
        match checked {
            Err(e) if e.is_refused() => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "cannot check the step queues yet; starting anyway");
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }

    async fn check_queues(&self, broker: &Broker) -> Result<(), tasker_broker::Error> {
        let o = &self.options;
        broker.declare(&o.namespaces).await?;
        for ns in &o.namespaces {
            let queue = topology::steps_queue(&o.queue_prefix, ns);
            // Consuming is what needs the permission; a delivery taken meanwhile goes back to
            // the queue when the subscription's channel closes, unacknowledged.
            drop(
                broker
                    .consume(&queue, &format!("{}-check-{ns}", o.name), 1)
                    .await
                    .map_err(|e| match e {
                        tasker_broker::Error::Refused { user, message, .. } => {
                            tasker_broker::Error::Refused {
                                what: format!("reading {queue:?} (namespace {ns:?})"),
                                user,
                                message,
                            }
                        }
                        e => e,
                    })?,
            );
        }
        Ok(())
    }

    async fn session(&self, cancel: &CancellationToken) -> Result<(), tasker_broker::Error> {
        let broker = self.connect().await?;
        let result = self.consume(&broker, cancel).await;
        self.stats.connected.store(false, Ordering::Relaxed);
        broker.close().await;
        result
    }

    async fn consume(
        &self,
        broker: &Broker,
        cancel: &CancellationToken,
    ) -> Result<(), tasker_broker::Error> {
        let o = &self.options;
        broker.declare(&o.namespaces).await?;
        // Results go through the results exchange, the one thing a worker's own broker user
        // may write to (routed to the results queue by its name).
        let publisher = broker
            .publisher()
            .await?
            .via(&topology::results_exchange(&o.queue_prefix));
        let dead = DeadLetters::new(broker.clone());
        let mut consumers = Vec::with_capacity(o.namespaces.len());
        for ns in &o.namespaces {
            let queue = topology::steps_queue(&o.queue_prefix, ns);
            consumers.push(
                broker
                    .consume(&queue, &format!("{}-{ns}", o.name), o.prefetch)
                    .await?,
            );
        }
        let stoppers: Vec<Stopper> = consumers.iter().map(|c| c.stopper()).collect();
        let mut deliveries = futures_util::stream::select_all(consumers);
        let (sink, mut completions) = CompletionSink::channel();
        let (results_tx, results_rx) = mpsc::unbounded_channel();
        let results_queue = topology::results_queue(&o.queue_prefix);
        let mut publishing = tokio::spawn(publish_results(publisher, results_queue, results_rx));
        let mut in_flight: HashMap<u64, InFlight> = HashMap::new();
        let mut deadlines: DelayQueue<u64> = DelayQueue::new();
        let mut next_job = 0u64;
        // Set once stopping: no step is taken any more, and the loop ends when the running
        // ones have reported (or at the shutdown timeout).
        let mut draining: Option<tokio::time::Instant> = None;
        self.stats.connected.store(true, Ordering::Relaxed);
        tracing::info!(namespaces = ?o.namespaces, "worker consuming");
        loop {
            if draining.is_some() && in_flight.is_empty() {
                break;
            }
            let drain_deadline = draining.unwrap_or_else(tokio::time::Instant::now);
            tokio::select! {
                biased;
                () = cancel.cancelled(), if draining.is_none() => {
                    draining = Some(tokio::time::Instant::now() + o.shutdown_timeout);
                    tracing::info!(running = in_flight.len(), timeout = ?o.shutdown_timeout,
                        "stopping: taking no more steps, letting running handlers finish");
                    for s in &stoppers {
                        let _ = s.stop().await;
                    }
                    self.host.drain(&sink);
                }
                () = tokio::time::sleep_until(drain_deadline), if draining.is_some() => {
                    tracing::warn!(unfinished = in_flight.len(),
                        "shutdown timeout: steps still running go back to their queues");
                    break;
                }
                ended = &mut publishing => {
                    return match ended {
                        Ok(Err(e)) => Err(e),
                        _ => Err(tasker_broker::Error::Closed),
                    };
                }
                Some(report) = completions.recv() => {
                    let mut next = Some(report);
                    while let Some(report) = next {
                        match report {
                            Report::Started(job) => {
                                // The core enforces the deadline for every host, counted from
                                // the handler's start, a little after the host's own timeout
                                // so a host that reports in time always wins.
                                if let Some(f) = in_flight.get_mut(&job)
                                    && f.deadline.is_none()
                                {
                                    f.deadline = Some(deadlines.insert(job, run_deadline(f.step.timeout_ms)));
                                    f.span = f.step.span("tasker.step.handler", None);
                                    self.stats.running.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Report::Done(c) => {
                                self.finish(c, &mut in_flight, &mut deadlines, &results_tx)
                            }
                            Report::Unstarted(job) => {
                                // Its message is never acknowledged: the broker gives it to
                                // another worker once this connection closes.
                                if let Some(f) = in_flight.remove(&job) && let Some(key) = &f.deadline {
                                    deadlines.try_remove(key);
                                    self.stats.running.fetch_sub(1, Ordering::Relaxed);
                                }
                                self.stats.in_flight.store(in_flight.len() as u64, Ordering::Relaxed);
                            }
                        }
                        next = completions.try_recv().ok();
                    }
                }
                Some(expired) = deadlines.next() => {
                    let job = expired.into_inner();
                    if let Some(f) = in_flight.get(&job) {
                        let outcome = timed_out(f.step.timeout_ms);
                        let now = Utc::now();
                        self.finish(Completion { job, outcome, started_at: now, finished_at: now },
                                    &mut in_flight, &mut deadlines, &results_tx);
                    }
                }
                batch = next_batch(&mut deliveries, BATCH_MAX) => {
                    let Some(batch) = batch else {
                        // The consumers ended: stopped by us (draining), else the channel closed.
                        if draining.is_some() {
                            continue;
                        }
                        return Err(tasker_broker::Error::Closed);
                    };
                    if draining.is_some() {
                        // Already on its way when the consumers stopped: back to the queue.
                        for delivery in batch.into_iter().flatten() {
                            let _ = delivery.nack(BasicNackOptions { requeue: true, ..Default::default() }).await;
                        }
                        continue;
                    }
                    ::metrics::histogram!(m::CONSUME_BATCH_SIZE.name).record(batch.len() as f64);
                    let mut jobs = Vec::with_capacity(batch.len());
                    for delivery in batch {
                        let delivery = delivery?;
                        let messages = match decode_batch::<StepMessage>(&delivery.data) {
                            Ok(m) if !m.is_empty() => m,
                            Ok(_) => {
                                delivery.ack(BasicAckOptions::default()).await?;
                                continue;
                            }
                            Err(e) => {
                                self.stats.malformed.fetch_add(1, Ordering::Relaxed);
                                tracing::warn!(error = %e, "malformed step message; dead-lettering it");
                                dead.bury(&delivery, &format!("malformed step message: {e}")).await?;
                                continue;
                            }
                        };
                        let carrier = Arc::new(Carrier { delivery, open: AtomicUsize::new(messages.len()) });
                        for message in messages {
                            next_job += 1;
                            tracing::debug!(step = %message.step_id, name = %message.step_name, attempt = message.attempt, "step received");
                            let late = queue_timed_out(&message, Utc::now());
                            in_flight.insert(next_job, InFlight { carrier: carrier.clone(), step: Attempt::from(&message), deadline: None, span: None });
                            if let Some(outcome) = late {
                                // Too late to start: report it without running the handler.
                                let now = Utc::now();
                                self.finish(Completion { job: next_job, outcome, started_at: now, finished_at: now },
                                            &mut in_flight, &mut deadlines, &results_tx);
                                continue;
                            }
                            if References::needed(&message) {
                                self.resolve_then_submit(Job::new(next_job, message), &sink);
                            } else {
                                jobs.push(Job::new(next_job, message));
                            }
                        }
                    }
                    self.stats.received.fetch_add(jobs.len() as u64, Ordering::Relaxed);
                    ::metrics::counter!(m::STEPS_RECEIVED.name).increment(jobs.len() as u64);
                    self.stats.in_flight.store(in_flight.len() as u64, Ordering::Relaxed);
                    if !jobs.is_empty() {
                        ::metrics::histogram!(m::HOST_BATCH_SIZE.name).record(jobs.len() as f64);
                        self.host.submit(jobs, &sink);
                    }
                }
            }
        }
        // Stopping: every result reported so far is published, and its step message
        // acknowledged, before the connection closes; a step that did not finish goes back to
        // its queue when it does.
        drop(results_tx);
        let left = draining
            .map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(tokio::time::Instant::now())
            })
            .max(FLUSH_AT_LEAST);
        match tokio::time::timeout(left, &mut publishing).await {
            Ok(Ok(published)) => published,
            Ok(Err(_)) => Err(tasker_broker::Error::Closed),
            Err(_) => {
                tracing::warn!("shutdown: results not confirmed in time; their steps run again");
                Ok(())
            }
        }
    }

    /// Fetches what the job's message carries by reference, then hands it to the host; if the
    /// orchestrator cannot answer, the attempt fails retryably.
    fn resolve_then_submit(&self, mut job: Job, sink: &CompletionSink) {
        let (references, host, sink) = (self.references.clone(), self.host.clone(), sink.clone());
        tokio::spawn(async move {
            match references.resolve(&mut job.message).await {
                Ok(()) => {
                    if job.message.parent_results_by_reference {
                        let m = &job.message;
                        job.parents = Some(ParentSource::new(references, m.task_id, m.step_id));
                    }
                    host.submit(vec![job], &sink)
                }
                Err(e) => {
                    let now = Utc::now();
                    sink.complete(Completion {
                        job: job.id,
                        outcome: Outcome::failure(
                            StepError::new(
                                "reference_unavailable",
                                format!("cannot fetch the step's context or parent results from the orchestrator: {e}"),
                            ),
                            true,
                        ),
                        started_at: now,
                        finished_at: now,
                    });
                }
            }
        });
    }

    fn finish(
        &self,
        c: Completion,
        in_flight: &mut HashMap<u64, InFlight>,
        deadlines: &mut DelayQueue<u64>,
        results: &mpsc::UnboundedSender<Publish>,
    ) {
        let Some(f) = in_flight.remove(&c.job) else {
            return;
        };
        if let Some(key) = &f.deadline {
            deadlines.try_remove(key);
            self.stats.running.fetch_sub(1, Ordering::Relaxed);
            let ran = (c.finished_at - c.started_at).to_std().unwrap_or_default();
            ::metrics::histogram!(m::HANDLER_DURATION.name).record(ran.as_secs_f64());
        }
        if let Outcome::Failure { error, .. } = &c.outcome
            && error.kind == "timeout"
        {
            ::metrics::counter!(m::STEPS_TIMED_OUT.name).increment(1);
        }
        let outcome = storable(c.outcome, self.options.max_result_bytes);
        match &outcome {
            Outcome::Success { .. } => {
                self.stats.succeeded.fetch_add(1, Ordering::Relaxed);
                ::metrics::counter!(m::STEPS_SUCCEEDED.name).increment(1);
            }
            Outcome::Failure { .. } => {
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                ::metrics::counter!(m::STEPS_FAILED.name).increment(1);
            }
        };
        self.stats
            .in_flight
            .store(in_flight.len() as u64, Ordering::Relaxed);
        // The handler's span ends with its outcome; the result's span is its child (or, for a
        // step no handler started, the dispatch span's) and ends once the broker confirms.
        if let Some(span) = &f.span {
            match &outcome {
                Outcome::Success { .. } => span.set(attr("tasker.outcome", "success")),
                Outcome::Failure {
                    error, retryable, ..
                } => {
                    let kind = if *retryable { "retryable" } else { "permanent" };
                    span.set(attr("tasker.outcome", kind));
                    span.set(attr("tasker.error.kind", error.kind.clone()));
                    span.fail(error.message.clone());
                }
            }
        }
        let published = f.step.span("tasker.step.result", f.span.as_ref());
        let result = StepResult {
            task_id: f.step.task_id,
            step_id: f.step.step_id,
            attempt: f.step.attempt,
            outcome,
            started_at: c.started_at,
            finished_at: c.finished_at,
            worker: self.options.name.clone(),
            traceparent: published.as_ref().map(Span::traceparent),
        };
        let _ = results.send((f.carrier, result, published));
    }
}

/// A result to publish: the step message that carried its step, and the result's span.
type Publish = (Arc<Carrier>, StepResult, Option<Span>);

/// A step message and how many of the steps it carried still await a confirmed result.
struct Carrier {
    delivery: Delivery,
    open: AtomicUsize,
}

impl Carrier {
    /// Records one confirmed result; acks the message when it was the last.
    async fn settle(&self) -> Result<(), tasker_broker::Error> {
        if self.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.delivery.ack(BasicAckOptions::default()).await?;
        }
        Ok(())
    }
}

struct InFlight {
    carrier: Arc<Carrier>,
    step: Attempt,
    /// Armed when a handler starts the job.
    deadline: Option<delay_queue::Key>,
    /// The handler's span, from its start (tracing on).
    span: Option<Span>,
}

/// What the core keeps of a job while a handler has it (the message itself went to the host).
struct Attempt {
    task_id: uuid::Uuid,
    step_id: uuid::Uuid,
    attempt: u32,
    timeout_ms: u64,
    /// The step's trace context and name, when it was dispatched with tracing on.
    trace: Option<Box<(String, String)>>,
}

impl From<&StepMessage> for Attempt {
    fn from(m: &StepMessage) -> Self {
        Attempt {
            task_id: m.task_id,
            step_id: m.step_id,
            attempt: m.attempt,
            timeout_ms: m.timeout_ms,
            trace: m
                .traceparent
                .clone()
                .map(|t| Box::new((t, m.step_name.clone()))),
        }
    }
}

impl Attempt {
    /// A span of this attempt, a child of `parent` (else of its dispatch span); `None` when
    /// the step came without trace context.
    fn span(&self, name: &'static str, parent: Option<&Span>) -> Option<Span> {
        let trace = self.trace.as_deref()?;
        let parent = parent.map_or_else(|| trace.0.clone(), Span::traceparent);
        Span::start(
            name,
            Some(&parent),
            vec![
                attr("tasker.task_id", self.task_id.to_string()),
                attr("tasker.step_id", self.step_id.to_string()),
                attr("tasker.step", trace.1.clone()),
                attr("tasker.attempt", i64::from(self.attempt)),
            ],
        )
    }
}

/// Longest run deadline the core arms: template validation allows 30 days; a message from
/// anywhere else is clamped rather than allowed to overflow the timer wheel.
const MAX_RUN: Duration = Duration::from_secs(30 * 24 * 3600);

/// When the core gives up on a started job: its timeout (clamped) plus a margin.
fn run_deadline(timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms).min(MAX_RUN) + Duration::from_millis(250)
}

/// The failure of a step received after its queue timeout, if it was.
fn queue_timed_out(message: &StepMessage, now: chrono::DateTime<Utc>) -> Option<Outcome> {
    let limit = message.queue_timeout_ms?;
    let waited = (now - message.dispatched_at).num_milliseconds().max(0) as u64;
    (waited > limit).then(|| {
        Outcome::permanent(
            "queue_timeout",
            format!("no worker started the step within its queue timeout ({limit} ms; it waited {waited} ms)"),
        )
    })
}

/// A handler's result that PostgreSQL could not store (a NUL character, nesting too deep) or
/// that exceeds `max_bytes` fails its own step, permanently and with the reason, here at the
/// source. A requested retry delay is kept within a day, and only on a retryable failure.
fn storable(outcome: Outcome, max_bytes: usize) -> Outcome {
    let result = match outcome {
        Outcome::Success { ref result } => result,
        Outcome::Failure {
            error,
            retryable,
            retry_after_ms,
        } => {
            return Outcome::Failure {
                error,
                retryable,
                retry_after_ms: retry_after_ms
                    .filter(|_| retryable)
                    .map(|ms| ms.min(tasker_shared::message::MAX_RETRY_AFTER_MS)),
            };
        }
    };
    if let Err(problem) =
        tasker_shared::json_check::check(result, tasker_shared::json_check::MAX_DEPTH)
    {
        return Outcome::permanent("invalid_result", format!("the handler's result {problem}"));
    }
    let size = serde_json::to_vec(result).map_or(usize::MAX, |b| b.len());
    if size > max_bytes {
        return Outcome::permanent(
            "result_too_large",
            format!(
                "the handler's result is {size} bytes of JSON; the limit is {max_bytes} (worker.max_result_bytes)"
            ),
        );
    }
    outcome
}

/// Publishes results in batches (one confirm round each, as few messages as fit), then settles
/// the step messages that carried them once their round is confirmed. Rounds are pipelined: a
/// batch goes out while earlier rounds still wait for their confirms (a disk sync on the
/// broker each), up to [`ROUNDS_IN_FLIGHT`]; a result never waits for another's confirm.
async fn publish_results(
    publisher: Publisher,
    queue: String,
    mut rx: mpsc::UnboundedReceiver<Publish>,
) -> Result<(), tasker_broker::Error> {
    let mut arrivals = futures_util::stream::poll_fn(|cx| rx.poll_recv(cx));
    let mut rounds = futures_util::stream::FuturesOrdered::new();
    let mut open = true;
    while open || !rounds.is_empty() {
        tokio::select! {
            batch = next_batch(&mut arrivals, BATCH_MAX), if open && rounds.len() < ROUNDS_IN_FLIGHT => {
                let Some(batch) = batch else {
                    // Every sender is gone (stopping): confirm what is in flight, then end.
                    open = false;
                    continue;
                };
                ::metrics::histogram!(m::RESULT_BATCH_SIZE.name).record(batch.len() as f64);
                let encoded: Vec<Vec<u8>> = batch
                    .iter()
                    .map(|(_, r, _)| serde_json::to_vec(r).expect("a StepResult always serializes"))
                    .collect();
                let out: Vec<Outgoing> = pack_results(encoded)
                    .into_iter()
                    .map(|payload| Outgoing {
                        queue: queue.clone(),
                        payload,
                    })
                    .collect();
                let round = publisher.send_all(&out).await?;
                rounds.push_back(async move {
                    round.confirmed().await?;
                    // The result spans end here, confirmed.
                    for (carrier, _, _span) in batch {
                        carrier.settle().await?;
                    }
                    Ok::<(), tasker_broker::Error>(())
                });
            }
            Some(confirmed) = rounds.next() => confirmed?,
        }
    }
    Ok(())
}

/// Result messages for encoded results: JSON arrays of up to [`RESULT_MESSAGE_BYTES`]; a
/// result larger than that travels alone.
fn pack_results(encoded: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let packed = pack_batches(encoded, BATCH_MAX, RESULT_MESSAGE_BYTES);
    let mut out = Vec::with_capacity(packed.len());
    for p in packed {
        match p {
            Ok(batch) => {
                ::metrics::histogram!(m::RESULT_MESSAGE_BATCH_SIZE.name)
                    .record(batch.items.len() as f64);
                out.push(batch.body);
            }
            Err((_, item)) => {
                let mut body = Vec::with_capacity(item.len() + 2);
                body.push(b'[');
                body.extend_from_slice(&item);
                body.push(b']');
                out.push(body);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(timeout_ms: u64, queue_timeout_ms: Option<u64>, waited_ms: i64) -> StepMessage {
        StepMessage {
            dispatched_at: Utc::now() - chrono::Duration::milliseconds(waited_ms),
            timeout_ms,
            queue_timeout_ms,
            ..crate::test_message()
        }
    }

    #[test]
    fn a_huge_timeout_is_clamped_instead_of_overflowing_the_timer() {
        assert_eq!(
            run_deadline(message(2_000, None, 0).timeout_ms),
            Duration::from_millis(2_250)
        );
        let clamped = run_deadline(message(u64::MAX, None, 0).timeout_ms);
        assert_eq!(clamped, MAX_RUN + Duration::from_millis(250));
        // The timer wheel takes it (it panics past about two years).
        let mut q: DelayQueue<u64> = DelayQueue::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async { q.insert(1, clamped) });
    }

    #[test]
    fn only_a_step_past_its_queue_timeout_is_refused_on_arrival() {
        let now = Utc::now();
        assert!(queue_timed_out(&message(1_000, None, 3_600_000), now).is_none());
        assert!(queue_timed_out(&message(1_000, Some(60_000), 1_000), now).is_none());
        match queue_timed_out(&message(1_000, Some(60_000), 120_000), now) {
            Some(Outcome::Failure {
                error, retryable, ..
            }) => {
                assert_eq!(error.kind, "queue_timeout");
                assert!(!retryable);
            }
            other => panic!("expected a queue_timeout failure, got {other:?}"),
        }
    }

    #[test]
    fn a_result_that_cannot_be_stored_fails_its_own_step() {
        let ok = Outcome::Success {
            result: json!({"a": "fine"}),
        };
        assert_eq!(storable(ok.clone(), 1 << 20), ok);
        match storable(
            Outcome::Success {
                result: json!({"a": "x".repeat(100)}),
            },
            64,
        ) {
            Outcome::Failure {
                error, retryable, ..
            } => {
                assert_eq!(error.kind, "result_too_large");
                assert!(error.message.contains("limit is 64"), "{}", error.message);
                assert!(!retryable);
            }
            other => panic!("expected result_too_large, got {other:?}"),
        }
        match storable(
            Outcome::Success {
                result: json!({"a": "bad\u{0}"}),
            },
            1 << 20,
        ) {
            Outcome::Failure {
                error, retryable, ..
            } => {
                assert_eq!(error.kind, "invalid_result");
                assert!(error.message.contains("/a"), "{}", error.message);
                assert!(!retryable);
            }
            other => panic!("expected invalid_result, got {other:?}"),
        }
    }
}
