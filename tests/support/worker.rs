//! A Rust worker running in this process ([`RunningWorker`]), and a test's orchestrator and
//! worker together ([`Cluster`]).

use super::*;

/// A worker running in this process.
#[derive(Debug)]
pub struct RunningWorker {
    pub stats: Arc<Stats>,
    /// Its id and name in the workers registry (an in-process worker does not report itself:
    /// [`RunningWorker::register`]).
    pub id: Uuid,
    pub name: String,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

impl RunningWorker {
    pub fn start(worker: Worker) -> RunningWorker {
        let cancel = CancellationToken::new();
        let stats = worker.stats();
        let (id, name) = (worker.options().id, worker.options().name.clone());
        let token = cancel.clone();
        let handle = tokio::spawn(async move { worker.run(token).await });
        RunningWorker {
            stats,
            id,
            name,
            cancel,
            handle,
        }
    }

    /// Reports it in the workers registry, serving `handlers` of `rust_examples`, as a worker
    /// process does at start (what its running reports need).
    pub async fn register(&self, client: &Client, handlers: &[&str]) -> anyhow::Result<()> {
        client
            .report_worker(self.id, &worker_report(&self.name, handlers))
            .await?;
        Ok(())
    }

    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// A test's orchestrator and Rust worker on an isolated environment.
#[derive(Debug)]
pub struct Cluster {
    pub env: TestEnv,
    pub orchestrator: RunningOrchestrator,
    pub worker: RunningWorker,
}

impl Cluster {
    pub async fn start() -> anyhow::Result<Cluster> {
        let mut env = TestEnv::new().await?;
        let orchestrator = env.orchestrator().await?;
        // What steps carry by reference, the worker fetches from this orchestrator.
        env.config.worker.orchestrator_url = orchestrator.url();
        let worker = env.rust_worker();
        Ok(Cluster {
            env,
            orchestrator,
            worker,
        })
    }

    /// Stops everything and deletes the test's database and queues.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.worker.stop().await;
        self.orchestrator.stop().await;
        self.env.cleanup().await
    }
}
