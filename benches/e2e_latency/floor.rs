//! The hardware floor: per step one durable commit, a confirmed publish, a consume, a confirmed
//! publish back, a consume and another durable commit — the least the hardware allows for the
//! same chain as a scenario's, run one hop after the other.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use sqlx::PgPool;

use tasker::TestEnv;
use tasker_broker::{BasicAckOptions, Broker, Outgoing, Publisher};

/// The hardware floor for an n-step chain (see the module docs).
pub(super) struct Floor {
    pool: PgPool,
    out: Publisher,
    back: Publisher,
    out_queue: String,
    back_queue: String,
    out_rx: tasker_broker::Subscription,
    back_rx: tasker_broker::Subscription,
}

impl Floor {
    pub(super) async fn start(env: &TestEnv) -> anyhow::Result<Floor> {
        let pool = PgPool::connect(&env.config.database_url).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, n bigint NOT NULL)",
        )
        .execute(&pool)
        .await?;
        sqlx::query("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING")
            .execute(&pool)
            .await?;
        let p = format!("{}.floor", env.config.queue_prefix);
        let broker = Broker::connect(&env.config.amqp_url, &p, "bench-floor").await?;
        broker
            .declare(&["out".to_owned(), "back".to_owned()])
            .await?;
        let out_queue = tasker_broker::topology::steps_queue(&p, "out");
        let back_queue = tasker_broker::topology::steps_queue(&p, "back");
        Ok(Floor {
            out: broker.publisher().await?,
            back: broker.publisher().await?,
            out_rx: broker.consume(&out_queue, "floor-out", 16).await?,
            back_rx: broker.consume(&back_queue, "floor-back", 16).await?,
            out_queue,
            back_queue,
            pool,
        })
    }

    async fn commit(&self) -> anyhow::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE bench_floor SET n = n + 1 WHERE id = 1")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(super) async fn chain(&mut self, steps: usize) -> anyhow::Result<Duration> {
        let started = Instant::now();
        for _ in 0..steps {
            self.commit().await?;
            hop(&self.out, &self.out_queue, &mut self.out_rx).await?;
            hop(&self.back, &self.back_queue, &mut self.back_rx).await?;
            self.commit().await?;
        }
        Ok(started.elapsed())
    }
}

async fn hop(
    p: &Publisher,
    queue: &str,
    rx: &mut tasker_broker::Subscription,
) -> anyhow::Result<()> {
    p.publish_all(&[Outgoing {
        queue: queue.to_owned(),
        payload: br#"{"step":"floor"}"#.to_vec(),
    }])
    .await?;
    let d = rx
        .next()
        .await
        .ok_or_else(|| anyhow::anyhow!("consumer closed"))??;
    d.ack(BasicAckOptions::default()).await?;
    Ok(())
}
