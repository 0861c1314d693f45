//! One broker session's consumption: the steps in flight, their deadlines, and one method per
//! event of the session's loop — steps delivered, a handler started or finished or left a step
//! unstarted, a deadline passed, stopping began.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::Utc;
use tokio::sync::mpsc;
use tokio_util::time::{DelayQueue, delay_queue};

use tasker_broker::{BasicAckOptions, BasicNackOptions, DeadLetters, Delivery, Stopper};
use tasker_shared::api::RunningStep;
use tasker_shared::message::decode_batch;
use tasker_shared::{Outcome, StepError, StepMessage, StepResult};
use tasker_telemetry::{Span, attr};

use super::Worker;
use super::attempt::Attempt;
use super::copies::{self, Recent};
use super::outcome::{queue_timed_out, run_deadline, storable};
use super::publish::{Carrier, Publish};
use crate::host::{Completion, CompletionSink, Job, Report, timed_out};
use crate::metrics as m;
use crate::references::{ParentSource, References};
use crate::stream::{Emitted, Emitter, Then};

/// The state of one session's consumption.
pub(super) struct Consumption<'w> {
    worker: &'w Worker,
    sink: CompletionSink,
    dead: DeadLetters,
    /// Finished results, to the publisher.
    results: mpsc::UnboundedSender<Publish>,
    /// Stream chunks, to the stream publisher (the emitters hold weak senders of it).
    chunks: mpsc::UnboundedSender<Emitted>,
    /// Attempts running for `running_report` or longer, to the running reporter.
    running: Option<mpsc::UnboundedSender<Vec<RunningStep>>>,
    in_flight: HashMap<u64, InFlight>,
    /// The step attempts in flight here: a second delivery of one (a re-send after its
    /// orchestrator died, while the first still runs) is not run beside it.
    attempts: HashSet<(uuid::Uuid, u32)>,
    /// The attempts that ended here lately: a copy of one is not run again.
    recent: Recent,
    /// Each started job's run deadline.
    pub deadlines: DelayQueue<u64>,
    next_job: u64,
    /// Set once stopping: no step is taken any more, and the session ends when the running
    /// ones have reported (or at this instant, the shutdown timeout).
    pub draining: Option<tokio::time::Instant>,
}

impl<'w> Consumption<'w> {
    pub fn new(
        worker: &'w Worker,
        sink: CompletionSink,
        dead: DeadLetters,
        results: mpsc::UnboundedSender<Publish>,
        chunks: mpsc::UnboundedSender<Emitted>,
        running: Option<mpsc::UnboundedSender<Vec<RunningStep>>>,
    ) -> Self {
        Self {
            worker,
            sink,
            dead,
            results,
            chunks,
            running,
            in_flight: HashMap::new(),
            attempts: HashSet::new(),
            recent: Recent::default(),
            deadlines: DelayQueue::new(),
            next_job: 0,
            draining: None,
        }
    }

    /// Stopping and nothing left running: the session may end.
    pub fn drained(&self) -> bool {
        self.draining.is_some() && self.in_flight.is_empty()
    }

    pub fn running(&self) -> usize {
        self.in_flight.len()
    }

    /// Stopping begins: no more steps are taken (the consumers are cancelled, the host told),
    /// and running handlers get the shutdown timeout to finish.
    pub async fn stop(&mut self, stoppers: &[Stopper]) {
        let timeout = self.worker.options.shutdown_timeout;
        self.draining = Some(tokio::time::Instant::now() + timeout);
        tracing::info!(
            running = self.in_flight.len(),
            ?timeout,
            "stopping: taking no more steps, letting running handlers finish"
        );
        for s in stoppers {
            let _ = s.stop().await;
        }
        self.worker.host.drain(&self.sink);
    }

    /// What the host reported about a job.
    pub fn report(&mut self, report: Report) {
        let stats = &self.worker.stats;
        match report {
            Report::Started(job) => {
                // The core enforces the deadline for every host, counted from the handler's
                // start, a little after the host's own timeout so a host that reports in time
                // always wins.
                if let Some(f) = self.in_flight.get_mut(&job)
                    && f.deadline.is_none()
                {
                    f.deadline = Some(self.deadlines.insert(job, run_deadline(f.step.timeout_ms)));
                    f.started = Some((Utc::now(), tokio::time::Instant::now()));
                    f.span = f.step.span("tasker.step.handler", None);
                    let queued = (Utc::now() - f.step.dispatched_at)
                        .to_std()
                        .unwrap_or_default();
                    ::metrics::histogram!(m::STEP_QUEUE.name, f.step.labels())
                        .record(queued.as_secs_f64());
                    stats.running.fetch_add(1, Ordering::Relaxed);
                }
            }
            Report::Done(c) => self.finish(c),
            Report::Over(job) => {
                // A copy of an attempt that had ended: its message is acknowledged, no result.
                if let Some(f) = self.in_flight.remove(&job) {
                    let attempt = (f.step.step_id, f.step.attempt);
                    self.attempts.remove(&attempt);
                    self.recent.insert(attempt);
                    tracing::info!(step = %attempt.0, attempt = attempt.1,
                        "a copy of a step whose attempt has ended; not run");
                    ::metrics::counter!(m::STEPS_DUPLICATE.name).increment(1);
                    stats.duplicate.fetch_add(1, Ordering::Relaxed);
                    let carrier = f.carrier;
                    tokio::spawn(async move { carrier.settle().await });
                }
                stats
                    .in_flight
                    .store(self.in_flight.len() as u64, Ordering::Relaxed);
            }
            Report::Unstarted(job) => {
                // Its message is never acknowledged: the broker gives it to another worker once
                // this connection closes.
                if let Some(f) = self.in_flight.remove(&job) {
                    self.attempts.remove(&(f.step.step_id, f.step.attempt));
                    if let Some(key) = &f.deadline {
                        self.deadlines.try_remove(key);
                        stats.running.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                stats
                    .in_flight
                    .store(self.in_flight.len() as u64, Ordering::Relaxed);
            }
        }
    }

    /// Hands the attempts whose handlers have run for `running_report` or longer, and were not
    /// reported yet, to the running reporter (a step that finishes sooner is never reported).
    pub fn report_running(&mut self) {
        let (Some(tx), Some(after)) = (&self.running, self.worker.options.running_report) else {
            return;
        };
        let now = tokio::time::Instant::now();
        let mut round = Vec::new();
        for f in self.in_flight.values_mut() {
            if let Some((at, since)) = f.started
                && !f.reported
                && now.duration_since(since) >= after
            {
                f.reported = true;
                round.push(RunningStep {
                    step_id: f.step.step_id,
                    attempt: i32::try_from(f.step.attempt).unwrap_or(i32::MAX),
                    started_at: at,
                });
            }
        }
        if !round.is_empty() {
            let _ = tx.send(round);
        }
    }

    /// A started job outlived its deadline: it fails (retryably) whatever its handler does later.
    pub fn expire(&mut self, job: u64) {
        if let Some(f) = self.in_flight.get(&job) {
            let outcome = timed_out(f.step.timeout_ms);
            let now = Utc::now();
            self.finish(Completion {
                job,
                outcome,
                started_at: now,
                finished_at: now,
            });
        }
    }

    /// Step messages delivered: each step becomes a job handed to the host (after what it
    /// carries by reference is fetched), or, too late to start, fails at once; a malformed
    /// message goes to the dead letters. While stopping, they go back to their queues.
    pub async fn take<E>(
        &mut self,
        batch: Vec<Result<Delivery, E>>,
    ) -> Result<(), tasker_broker::Error>
    where
        tasker_broker::Error: From<E>,
    {
        if self.draining.is_some() {
            // Already on its way when the consumers stopped: back to the queue.
            for delivery in batch.into_iter().flatten() {
                let requeue = BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                };
                let _ = delivery.nack(requeue).await;
            }
            return Ok(());
        }
        ::metrics::histogram!(m::CONSUME_BATCH_SIZE.name).record(batch.len() as f64);
        let mut jobs = Vec::with_capacity(batch.len());
        let mut received = 0;
        for delivery in batch {
            let Some(messages) = self.read(delivery?).await? else {
                continue;
            };
            let (delivery, messages) = messages;
            let carrier = Arc::new(Carrier {
                delivery,
                open: AtomicUsize::new(messages.len()),
            });
            for message in messages {
                let attempt = (message.step_id, message.attempt);
                if self.recent.contains(&attempt) || !self.attempts.insert(attempt) {
                    // Running here, or ended here lately: its result answers for this delivery
                    // too, and another run would exceed the step's concurrency limit.
                    tracing::debug!(step = %message.step_id, attempt = message.attempt,
                        "another delivery of an attempt running or ended here; not run again");
                    ::metrics::counter!(m::STEPS_DUPLICATE.name).increment(1);
                    self.worker.stats.duplicate.fetch_add(1, Ordering::Relaxed);
                    carrier.settle().await?;
                    continue;
                }
                received += 1;
                let copy = carrier.delivery.redelivered || message.resent;
                if let Some(job) = self.accept(&carrier, message, copy) {
                    jobs.push(job);
                }
            }
        }
        let stats = &self.worker.stats;
        // Every step taken on, handed over now or later (a copy once checked, one carrying
        // references once fetched) or failed at once (too late to start).
        stats.received.fetch_add(received, Ordering::Relaxed);
        ::metrics::counter!(m::STEPS_RECEIVED.name).increment(received);
        stats
            .in_flight
            .store(self.in_flight.len() as u64, Ordering::Relaxed);
        if !jobs.is_empty() {
            ::metrics::histogram!(m::HOST_BATCH_SIZE.name).record(jobs.len() as f64);
            self.worker.host.submit(jobs, &self.sink);
        }
        Ok(())
    }

    /// The steps a message carries; `None` when there is nothing to run (an empty message,
    /// acknowledged; a malformed one, dead-lettered).
    async fn read(
        &self,
        delivery: Delivery,
    ) -> Result<Option<(Delivery, Vec<StepMessage>)>, tasker_broker::Error> {
        match decode_batch::<StepMessage>(&delivery.data) {
            Ok(m) if !m.is_empty() => Ok(Some((delivery, m))),
            Ok(_) => {
                delivery.ack(BasicAckOptions::default()).await?;
                Ok(None)
            }
            Err(e) => {
                self.worker.stats.malformed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, "malformed step message; dead-lettering it");
                self.dead
                    .bury(&delivery, &format!("malformed step message: {e}"))
                    .await?;
                Ok(None)
            }
        }
    }

    /// One step of a message, in flight from now on: the job to hand to the host now, if any
    /// (a step past its queue timeout fails at once; a `copy` handed over again, once the
    /// orchestrator says its attempt is open; one carrying references, once they are fetched).
    fn accept(&mut self, carrier: &Arc<Carrier>, message: StepMessage, copy: bool) -> Option<Job> {
        self.next_job += 1;
        let job = self.next_job;
        tracing::debug!(step = %message.step_id, name = %message.step_name, attempt = message.attempt, "step received");
        let late = queue_timed_out(&message, Utc::now());
        let emitter = Emitter::new(
            &message,
            self.worker.options.max_stream_bytes,
            self.chunks.downgrade(),
        );
        self.in_flight.insert(
            job,
            InFlight {
                carrier: carrier.clone(),
                step: Attempt::from(&message),
                emitter: emitter.clone(),
                deadline: None,
                span: None,
                started: None,
                reported: false,
            },
        );
        if let Some(outcome) = late {
            // Too late to start: report it without running the handler.
            let now = Utc::now();
            self.finish(Completion {
                job,
                outcome,
                started_at: now,
                finished_at: now,
            });
            return None;
        }
        let job = Job::new(job, message).streaming(emitter);
        if copy || References::needed(&job.message) {
            self.check_then_submit(job, copy);
            return None;
        }
        Some(job)
    }

    /// Hands the job to the host once the orchestrator says its attempt is open (a `copy`) and
    /// what its message carries by reference is fetched; if the references cannot be fetched,
    /// the attempt fails retryably.
    fn check_then_submit(&self, mut job: Job, copy: bool) {
        let (references, host, sink) = (
            self.worker.references.clone(),
            self.worker.host.clone(),
            self.sink.clone(),
        );
        let check = copy.then_some(self.worker.options.id);
        tokio::spawn(async move {
            let (step, attempt) = (job.message.step_id, job.message.attempt);
            if let Some(worker) = check
                && copies::over(references.client(), worker, step, attempt).await
            {
                return sink.over(job.id);
            }
            if !References::needed(&job.message) {
                return host.submit(vec![job], &sink);
            }
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

    /// A job's outcome: counted, checked to be storable, and handed to the publisher.
    fn finish(&mut self, c: Completion) {
        let stats = &self.worker.stats;
        let Some(f) = self.in_flight.remove(&c.job) else {
            return;
        };
        self.attempts.remove(&(f.step.step_id, f.step.attempt));
        self.recent.insert((f.step.step_id, f.step.attempt));
        if let Some(key) = &f.deadline {
            self.deadlines.try_remove(key);
            stats.running.fetch_sub(1, Ordering::Relaxed);
            let ran = (c.finished_at - c.started_at).to_std().unwrap_or_default();
            ::metrics::histogram!(m::HANDLER_DURATION.name, f.step.labels())
                .record(ran.as_secs_f64());
        }
        if let Outcome::Failure { error, .. } = &c.outcome
            && error.kind == "timeout"
        {
            ::metrics::counter!(m::STEPS_TIMED_OUT.name).increment(1);
        }
        let outcome = match f.emitter.overflowed() {
            true => Outcome::permanent(
                "stream_too_large",
                format!(
                    "the step streamed more than {} bytes (worker.max_stream_bytes)",
                    self.worker.options.max_stream_bytes
                ),
            ),
            false => storable(c.outcome, self.worker.options.max_result_bytes),
        };
        match &outcome {
            Outcome::Success { .. } => {
                stats.succeeded.fetch_add(1, Ordering::Relaxed);
                ::metrics::counter!(m::STEPS_SUCCEEDED.name).increment(1);
            }
            Outcome::Failure { .. } => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                ::metrics::counter!(m::STEPS_FAILED.name).increment(1);
            }
        };
        stats
            .in_flight
            .store(self.in_flight.len() as u64, Ordering::Relaxed);
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
        // Nothing more is streamed; the result says how many chunks the attempt streamed.
        let end = f.emitter.close();
        let result = StepResult {
            task_id: f.step.task_id,
            step_id: f.step.step_id,
            attempt: f.step.attempt,
            outcome,
            started_at: c.started_at,
            finished_at: c.finished_at,
            worker: self.worker.options.name.clone(),
            traceparent: published.as_ref().map(Span::traceparent),
            streamed: end.as_ref().map(|e| e.seq + 1),
        };
        let publish = (f.carrier, result, published);
        // A step that streamed: its result follows its stream's end, once that is confirmed.
        let Some(end) = end else {
            let _ = self.results.send(publish);
            return;
        };
        let results = self.results.clone();
        let then: Then = Box::new(move || {
            let _ = results.send(publish);
        });
        if let Err(then) = f.emitter.end(end, then) {
            then();
        }
    }
}

struct InFlight {
    carrier: Arc<Carrier>,
    step: Attempt,
    /// What its handler streams with.
    emitter: Emitter,
    /// Armed when a handler starts the job.
    deadline: Option<delay_queue::Key>,
    /// The handler's span, from its start (tracing on).
    span: Option<Span>,
    /// When a handler started it (the wall clock reported, the instant measured).
    started: Option<(chrono::DateTime<Utc>, tokio::time::Instant)>,
    /// Reported to the orchestrator as running.
    reported: bool,
}
