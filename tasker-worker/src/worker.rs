//! The worker service: consumes its namespaces' step queues, hands steps to the host in
//! batches, publishes results with publisher confirms (a batch per confirm round, packed into
//! as few messages as fit), then acks the step messages. One step message may carry many
//! steps; it is acknowledged only after the result of every step it carried is confirmed, so a
//! worker that dies mid-step has its steps redelivered by the broker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use tasker_broker::{Broker, DeadLetters, Stopper, Supervisor, next_batch, supervisor, topology};
use tasker_client::{Client, ClientOptions};
use tasker_shared::Config;

mod attempt;
mod consumption;
mod copies;
pub(crate) mod outcome;
mod publish;
mod running;
mod stream;

use consumption::Consumption;
pub(crate) use outcome::run_deadline;
use publish::publish_results;

use crate::host::{CompletionSink, HandlerHost};
use crate::references::References;

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
    /// Declare quorum queues (`broker.queue_type`).
    pub quorum: bool,
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
    /// Most bytes one step attempt may stream.
    pub max_stream_bytes: u64,
    /// CA certificates trusted for `amqps://` and an `https://` orchestrator ([`Config::tls_ca_file`]).
    pub tls_ca_file: Option<std::path::PathBuf>,
    /// On stop, how long running handlers may finish and have their results published.
    pub shutdown_timeout: Duration,
    /// Its id in the orchestrator's workers registry (chosen at start).
    pub id: uuid::Uuid,
    /// Handlers running this long are reported to the orchestrator (`worker.running_report_ms`;
    /// `None`: never).
    pub running_report: Option<Duration>,
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
            quorum: config.broker.queue_type == tasker_shared::config::QueueType::Quorum,
            namespaces,
            prefetch: config.worker.prefetch,
            name,
            orchestrator_url: config.worker.orchestrator_url.clone(),
            api_token: config.worker.api_token.clone(),
            max_result_bytes: config.worker.max_result_bytes,
            max_stream_bytes: config.worker.max_stream_bytes,
            tls_ca_file: config.tls_ca_file.clone(),
            shutdown_timeout: Duration::from_millis(config.worker.shutdown_timeout_ms),
            id: uuid::Uuid::now_v7(),
            running_report: (config.worker.running_report_ms > 0)
                .then(|| Duration::from_millis(config.worker.running_report_ms)),
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
    /// Copies of a step attempt not run: one running or ended here, or one the orchestrator
    /// said had ended (`tasker_worker_steps_duplicate_total`).
    pub duplicate: AtomicU64,
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
        .map(|b| b.quorum(o.quorum))
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
        broker.ensure(&o.namespaces).await?;
        for (ns, queue) in o.namespaces.iter().flat_map(|ns| {
            topology::namespace_queues(&o.queue_prefix, ns)
                .into_iter()
                .map(move |q| (ns, q))
        }) {
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

    /// Subscribes to each namespace's steps queue and its priority lanes, each with its own
    /// prefetch: a backlog prefetched from one lane never holds back another's steps, and the
    /// host starts the steps it holds high priority first.
    async fn subscribe(
        &self,
        broker: &Broker,
    ) -> Result<Vec<tasker_broker::Subscription>, tasker_broker::Error> {
        let o = &self.options;
        let mut consumers = Vec::with_capacity(o.namespaces.len() * 3);
        for ns in &o.namespaces {
            let lanes = std::iter::once(None).chain(topology::LANES.map(Some));
            for lane in lanes {
                let queue = topology::lane_queue(&o.queue_prefix, ns, lane);
                let tag = match lane {
                    None => format!("{}-{ns}", o.name),
                    Some(lane) => format!("{}-{ns}@{lane}", o.name),
                };
                consumers.push(broker.consume(&queue, &tag, o.prefetch).await?);
            }
        }
        Ok(consumers)
    }

    async fn consume(
        &self,
        broker: &Broker,
        cancel: &CancellationToken,
    ) -> Result<(), tasker_broker::Error> {
        let o = &self.options;
        broker.ensure(&o.namespaces).await?;
        // Results go through the results exchange, the one thing a worker's own broker user
        // may write to (routed to the results queue by its name).
        let publisher = broker
            .publisher()
            .await?
            .via(&topology::results_exchange(&o.queue_prefix));
        let consumers = self.subscribe(broker).await?;
        let stoppers: Vec<Stopper> = consumers.iter().map(|c| c.stopper()).collect();
        // One queue left without its consumer (the broker cancelled it: a quorum queue's
        // leader lost) ends the session, and the next one subscribes to every queue again.
        let mut deliveries = tasker_broker::until_any_ends(consumers);
        let mut ended = false;
        let (sink, mut completions) = CompletionSink::channel();
        let (results_tx, results_rx) = mpsc::unbounded_channel();
        let results_queue = topology::results_queue(&o.queue_prefix);
        let (chunks_tx, chunks_rx) = mpsc::unbounded_channel();
        let mut streaming = tokio::spawn(stream::publish_chunks(
            publisher.clone(),
            topology::streams_queue(&o.queue_prefix),
            chunks_rx,
        ));
        let mut publishing = tokio::spawn(publish_results(publisher, results_queue, results_rx));
        let running = o
            .running_report
            .map(|_| running::spawn(o.orchestrator_client(), o.id));
        // Twice a round: a handler is reported 1 to 1.5 rounds after it started.
        let mut report_every =
            tokio::time::interval(o.running_report.unwrap_or(Duration::from_secs(3600)) / 2);
        report_every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut c = Consumption::new(
            self,
            sink,
            DeadLetters::new(broker.clone()),
            results_tx,
            chunks_tx,
            running,
        );
        self.stats.connected.store(true, Ordering::Relaxed);
        tracing::info!(namespaces = %o.namespaces.join(","), "worker consuming");
        while !c.drained() {
            let drain_deadline = c.draining.unwrap_or_else(tokio::time::Instant::now);
            tokio::select! {
                biased;
                () = cancel.cancelled(), if c.draining.is_none() => c.stop(&stoppers).await,
                () = tokio::time::sleep_until(drain_deadline), if c.draining.is_some() => {
                    tracing::warn!(unfinished = c.running(),
                        "shutdown timeout: steps still running go back to their queues");
                    break;
                }
                ended = &mut publishing => {
                    return match ended {
                        Ok(Err(e)) => Err(e),
                        _ => Err(tasker_broker::Error::Closed),
                    };
                }
                ended = &mut streaming => {
                    return match ended {
                        Ok(Err(e)) => Err(e),
                        _ => Err(tasker_broker::Error::Closed),
                    };
                }
                Some(report) = completions.recv() => {
                    c.report(report);
                    while let Ok(report) = completions.try_recv() {
                        c.report(report);
                    }
                }
                Some(expired) = c.deadlines.next() => c.expire(expired.into_inner()),
                _ = report_every.tick(), if o.running_report.is_some() => c.report_running(),
                batch = next_batch(&mut deliveries, BATCH_MAX), if !ended => match batch {
                    Some(batch) => c.take(batch).await?,
                    // A consumer ended: stopped by us (draining: the steps still running
                    // finish; one still on its way goes back to its queue), else the broker
                    // ended it or its channel closed.
                    None if c.draining.is_some() => ended = true,
                    None => {
                        tracing::warn!("a step queue's consumer was ended by the broker; \
                            subscribing to every queue again");
                        return Err(tasker_broker::Error::Closed);
                    }
                },
            }
        }
        // Stopping: every result reported so far is published, and its step message
        // acknowledged, before the connection closes; a step that did not finish goes back to
        // its queue when it does.
        let draining = c.draining;
        drop(c);
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
}
