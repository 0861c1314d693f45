//! The floor: a 4-step chain's hops (durable commits, confirmed publishes, consumes) pipelined
//! and batched as far as they go, driven like the scenarios.

use super::*;

/// Steps in a floor chain.
pub(crate) const FLOOR_STEPS: usize = 4;

/// The same hops as a 4-step chain — per step a durable commit, a confirmed publish, a consume,
/// a confirmed publish back, a consume, a durable commit — with every commit and confirm round
/// batched over whatever has arrived: the most this machine allows for them. Started once, its
/// hops serve every load level; [`Load::one`] runs one chain.
pub(crate) struct Floor {
    pub(crate) pool: PgPool,
    pub(crate) broker: Broker,
    pub(crate) publisher: tasker_broker::Publisher,
    pub(crate) out_queue: String,
    /// Chains started and not finished yet, by id.
    pub(crate) waiting: Arc<Mutex<HashMap<Uuid, oneshot::Sender<()>>>>,
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    pub(crate) hops: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Floor {
    pub(crate) async fn start(env: &TestEnv) -> anyhow::Result<Floor> {
        let pool = PgPool::connect(&env.config.database_url).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS bench_floor (id uuid PRIMARY KEY, step int NOT NULL)",
        )
        .execute(&pool)
        .await?;
        let prefix = format!("{}.floor", env.config.queue_prefix);
        let broker = Broker::connect(&env.config.amqp_url, &prefix, "bench-floor").await?;
        broker.declare(&["out".to_owned()]).await?;
        let out_queue = topology::steps_queue(&prefix, "out");
        let back_queue = topology::results_queue(&prefix);
        let cancel = tokio_util::sync::CancellationToken::new();

        // The "worker": consume steps in batches, send each back in one confirm round, ack.
        let worker = {
            let back_queue = back_queue.clone();
            relay(
                broker.consume(&out_queue, "floor-worker", 512).await?,
                broker.publisher().await?,
                cancel.clone(),
                move |ids| {
                    let out = ids
                        .into_iter()
                        .map(|id| Outgoing {
                            queue: back_queue.clone(),
                            payload: id.as_bytes().to_vec(),
                        })
                        .collect();
                    async move { Some(out) }
                },
            )
        };

        // The "orchestrator": consume results in batches, commit them in one transaction (one
        // row update per step), publish the next steps in one confirm round, ack; a chain is
        // done after FLOOR_STEPS steps.
        let waiting: Arc<Mutex<HashMap<Uuid, oneshot::Sender<()>>>> = Arc::default();
        let orchestrator = {
            let (pool, out_queue, waiting) = (pool.clone(), out_queue.clone(), waiting.clone());
            relay(
                broker
                    .consume(&back_queue, "floor-orchestrator", 512)
                    .await?,
                broker.publisher().await?,
                cancel.clone(),
                move |ids| {
                    let (pool, out_queue, waiting) =
                        (pool.clone(), out_queue.clone(), waiting.clone());
                    async move {
                        let steps: Vec<(Uuid, i32)> = sqlx::query_as(
                            "UPDATE bench_floor SET step = step + 1 WHERE id = ANY($1) RETURNING id, step",
                        )
                        .bind(&ids)
                        .fetch_all(&pool)
                        .await
                        .ok()?;
                        let mut next = Vec::new();
                        for (id, step) in steps {
                            if step < FLOOR_STEPS as i32 {
                                next.push(Outgoing {
                                    queue: out_queue.clone(),
                                    payload: id.as_bytes().to_vec(),
                                });
                            } else if let Some(tx) = waiting.lock().unwrap().remove(&id) {
                                let _ = tx.send(());
                            }
                        }
                        Some(next)
                    }
                },
            )
        };
        Ok(Floor {
            publisher: broker.publisher().await?,
            pool,
            broker,
            out_queue,
            waiting,
            cancel,
            hops: Mutex::new(vec![worker, orchestrator]),
        })
    }

    pub(crate) async fn stop(&self) {
        self.cancel.cancel();
        let hops = std::mem::take(&mut *self.hops.lock().unwrap());
        for hop in hops {
            let _ = hop.await;
        }
        self.broker.close().await;
    }
}

impl Load for Floor {
    fn name(&self) -> &str {
        "floor_4_steps"
    }

    fn steps(&self) -> usize {
        FLOOR_STEPS
    }

    /// Starts a chain (commit + publish its first step) and waits for its end.
    async fn one(&self) -> anyhow::Result<Duration> {
        let began = Instant::now();
        let id = Uuid::now_v7();
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id, tx);
        let chain = async {
            sqlx::query("INSERT INTO bench_floor VALUES ($1, 0)")
                .bind(id)
                .execute(&self.pool)
                .await?;
            self.publisher
                .publish_all(&[Outgoing {
                    queue: self.out_queue.clone(),
                    payload: id.as_bytes().to_vec(),
                }])
                .await?;
            tokio::time::timeout(Duration::from_secs(60), rx).await??;
            anyhow::Ok(began.elapsed())
        };
        let result = chain.await;
        if result.is_err() {
            self.waiting.lock().unwrap().remove(&id);
        }
        result
    }
}

/// One hop of the floor until cancelled: take what has arrived (up to 256 messages, each a
/// chain id), let `step` turn the ids into the next messages (`None` stops the hop), publish
/// them in one confirm round, then ack.
pub(crate) fn relay<F, Fut>(
    mut rx: tasker_broker::Subscription,
    publisher: tasker_broker::Publisher,
    cancel: tokio_util::sync::CancellationToken,
    mut step: F,
) -> tokio::task::JoinHandle<()>
where
    F: FnMut(Vec<Uuid>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<Vec<Outgoing>>> + Send,
{
    tokio::spawn(async move {
        loop {
            let batch = tokio::select! {
                () = cancel.cancelled() => return,
                b = next_batch(&mut rx, 256) => b,
            };
            let Some(batch) = batch else { return };
            let deliveries: Vec<_> = batch.into_iter().filter_map(Result::ok).collect();
            let ids = deliveries
                .iter()
                .filter_map(|d| Uuid::from_slice(&d.data).ok())
                .collect();
            let Some(out) = step(ids).await else { return };
            if publisher.publish_all(&out).await.is_err() {
                return;
            }
            for d in deliveries {
                let _ = d.ack(BasicAckOptions::default()).await;
            }
        }
    })
}
