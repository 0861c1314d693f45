//! An orchestrator running in this process ([`RunningOrchestrator`]), and the events a test
//! waits on through it (dead letters kept, tasks completed).

use super::*;

/// An orchestrator running in this process.
#[derive(Debug)]
pub struct RunningOrchestrator {
    pub addr: SocketAddr,
    /// `http://` or, with `orchestrator.tls_cert_file`, `https://` and the address.
    base_url: String,
    pub client: Client,
    pub shared: Shared,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

impl RunningOrchestrator {
    pub async fn start(config: Config) -> anyhow::Result<RunningOrchestrator> {
        Self::start_on(config, "127.0.0.1:0").await
    }

    /// Starts one whose API listens on `addr`.
    pub async fn start_on(config: Config, addr: &str) -> anyhow::Result<RunningOrchestrator> {
        // With the workers' token, if they have one (an orchestrator that requires tokens), and
        // the CA they trust.
        let options = ClientOptions {
            token: config.worker.api_token.clone(),
            tls_ca_file: config.tls_ca_file.clone(),
        };
        let orchestrator = Orchestrator::start(config).await?;
        let scheme = if orchestrator.serves_tls() {
            "https"
        } else {
            "http"
        };
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = orchestrator.shared().clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            if let Err(e) = orchestrator.run(listener, token).await {
                eprintln!("orchestrator stopped with an error: {e}");
            }
        });
        let base_url = format!("{scheme}://{addr}");
        let client = Client::with_options(&base_url, &options)?;
        let mut up = shared.broker_watch();
        tokio::time::timeout(Duration::from_secs(20), up.wait_for(|up| *up))
            .await
            .context("orchestrator not connected to the broker after 20 s")??;
        // And listening for notifications, so a test's next registration or completion on
        // another orchestrator reaches this one.
        let mut listening = shared.events.listening();
        tokio::time::timeout(Duration::from_secs(20), listening.wait_for(|up| *up))
            .await
            .context("orchestrator not listening for notifications after 20 s")??;
        Ok(RunningOrchestrator {
            addr,
            base_url,
            client,
            shared,
            cancel,
            handle,
        })
    }

    pub fn events(&self) -> &Events {
        &self.shared.events
    }

    /// Waits until `check` gives a value, looking again at every event of this orchestrator (a
    /// sweep comes every `sweep_interval_ms`, 200 ms in tests), for at most `timeout`.
    pub async fn until<T, F, Fut>(
        &self,
        timeout: Duration,
        what: &str,
        check: F,
    ) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
    {
        let mut events = self.events().subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(v) = check().await? {
                return Ok(v);
            }
            if tokio::time::timeout_at(deadline, events.recv())
                .await
                .is_err()
            {
                anyhow::bail!("{what}: not within {timeout:?}");
            }
        }
    }

    /// Task completions announced on this orchestrator from now on (its own, and other
    /// orchestrators' relayed through PostgreSQL `NOTIFY`).
    pub fn completions(&self) -> Completions {
        Completions(self.shared.events.subscribe())
    }

    pub fn url(&self) -> String {
        self.base_url.clone()
    }

    /// Creates a task and waits (through the completion notification) for it to finish.
    pub async fn run_task(
        &self,
        namespace: &str,
        name: &str,
        context: Value,
    ) -> anyhow::Result<Task> {
        let task = self
            .client
            .create_task(&CreateTask::new(namespace, name).context(context))
            .await?;
        self.wait(task.id).await
    }

    /// Waits for a task to become terminal (at most 30 s).
    pub async fn wait(&self, id: Uuid) -> anyhow::Result<Task> {
        let task = self.client.task(id, Some(Duration::from_secs(30))).await?;
        anyhow::ensure!(task.is_terminal(), "task {id} still running after 30 s");
        Ok(task)
    }

    /// Dead letters this orchestrator keeps from now on.
    pub fn dead_letters_kept(&self) -> KeptDeadLetters {
        KeptDeadLetters(self.shared.events.subscribe())
    }

    /// Stops it as a SIGKILL would, without a graceful shutdown: its work is dropped where it
    /// stands (open transactions roll back as their connections close).
    pub async fn kill(self) {
        self.handle.abort();
        let _ = self.handle.await;
    }

    /// Stops it and waits until it has.
    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// Dead letters as the orchestrator keeps them, announced by [`Event::DeadLetterKept`].
#[derive(Debug)]
pub struct KeptDeadLetters(tokio::sync::broadcast::Receiver<Event>);

impl KeptDeadLetters {
    /// Waits (at most `timeout`) for `n` dead letters to be kept; their ids, in order.
    pub async fn take(&mut self, n: usize, timeout: Duration) -> anyhow::Result<Vec<i64>> {
        let mut ids = Vec::with_capacity(n);
        let wait = async {
            while ids.len() < n {
                if let Event::DeadLetterKept { id } = self.0.recv().await? {
                    ids.push(id);
                }
            }
            anyhow::Ok(())
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(done) => done.map(|()| ids),
            Err(_) => anyhow::bail!("{} of {n} dead letters kept within {timeout:?}", ids.len()),
        }
    }
}

/// Task completions, as the API's waiters see them: driven by the completion notification.
#[derive(Debug)]
pub struct Completions(tokio::sync::broadcast::Receiver<Event>);

impl Completions {
    /// Waits (at most `timeout`) for task `id` to finish and returns its final state.
    pub async fn wait_for(&mut self, id: Uuid, timeout: Duration) -> anyhow::Result<TaskState> {
        let wait = async {
            loop {
                if let Event::TaskFinished { task_id, state } = self.0.recv().await?
                    && task_id == id
                {
                    return anyhow::Ok(state);
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| anyhow::anyhow!("task {id} did not finish within {timeout:?}"))?
    }
}
