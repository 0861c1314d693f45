//! The benchmark's processes: the orchestrator and workers as release binaries, started on a
//! test environment of their own, killed on drop ([`Stack`]).

use super::*;

/// A Tasker process started for the benchmark; killed on drop.
pub(crate) struct Process {
    pub(crate) child: Child,
    pub(crate) pid: u32,
}

impl Process {
    /// Starts `command` and waits (up to a minute) for a line containing `ready` on its
    /// stdout or stderr; the rest of its output is drained.
    pub(crate) async fn start(
        mut command: Command,
        what: &str,
        ready: &str,
    ) -> anyhow::Result<Process> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {what}"))?;
        let pid = child.id().context("no pid")?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let mut seen = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = rx.recv().await {
                if line.contains(ready) {
                    return true;
                }
                seen.push(line);
            }
            false
        })
        .await
        .unwrap_or(false);
        anyhow::ensure!(
            found,
            "{what} did not become ready; its output:\n{}",
            seen.join("\n")
        );
        tokio::spawn(async move { while rx.recv().await.is_some() {} });
        Ok(Process { child, pid })
    }

    /// Resident memory now and at its peak (VmRSS, VmHWM), in bytes.
    pub(crate) fn memory(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let field = |name: &str| -> Option<u64> {
            let line = status.lines().find(|l| l.starts_with(name))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

pub(crate) fn env_for(command: &mut Command, env: &TestEnv) {
    let c = &env.config;
    command
        .env("DATABASE_URL", &c.database_url)
        .env("AMQP_URL", &c.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &c.queue_prefix)
        // The bench measures the engine: no token to check (a check costs a hash and a map
        // look-up per request).
        .env("TASKER_ORCHESTRATOR__AUTH", "off")
        // The 1,000 readers of the streams bench all come from 127.0.0.1.
        .env("TASKER_ORCHESTRATOR__MAX_CONNECTIONS_PER_PEER", "1200")
        .env("TASKER_ORCHESTRATOR__MAX_EVENT_STREAMS", "1200")
        .env(
            "RUST_LOG",
            "warn,tasker_orchestration=info,tasker_orchestrator=info",
        )
        .env("NO_COLOR", "1");
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The benchmark's world: a database and queue prefix of its own, one orchestrator, one Rust
/// worker, optionally the Python worker.
pub(crate) struct Stack {
    pub(crate) env: TestEnv,
    pub(crate) url: String,
    pub(crate) client: Client,
    pub(crate) orchestrator: Process,
    pub(crate) workers: BTreeMap<&'static str, (Process, String)>,
    pub(crate) done: Completions,
}

impl Stack {
    pub(crate) async fn start() -> anyhow::Result<Stack> {
        let env = TestEnv::new().await.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\nStart the services first: `cargo make services-start` (or run `cargo make bench-throughput`)"
            )
        })?;
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}");
        let mut command = Command::new(workspace_binary("tasker-orchestrator")?);
        command
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--templates")
            .arg(repo_root().join("tests/fixtures/task_templates"));
        env_for(&mut command, &env);
        let orchestrator =
            Process::start(command, "the orchestrator", "tasker-orchestrator listening").await?;
        let done = Completions::listen(&env.config.database_url).await?;
        let mut stack = Stack {
            client: Client::new(&url),
            url,
            env,
            orchestrator,
            workers: BTreeMap::new(),
            done,
        };
        stack.worker("rust").await?;
        Ok(stack)
    }

    /// Starts the worker of `language` (the Rust binary, or a binding's conformance worker).
    pub(crate) async fn worker(&mut self, language: &'static str) -> anyhow::Result<()> {
        self.worker_with(language, &[]).await
    }

    /// [`Stack::worker`] with more environment variables (`TASKER_WORKER__…` settings); a
    /// worker of that language already running is stopped first.
    pub(crate) async fn worker_with(
        &mut self,
        language: &'static str,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<()> {
        if let Some((running, _)) = self.workers.remove(language) {
            running.stop().await;
        }
        let health = free_port()?;
        let mut command = if language == "rust" {
            Command::new(workspace_binary("tasker-worker-rust")?)
        } else {
            let entry = repo_root()
                .join("workers")
                .join(language)
                .join("conformance-worker");
            anyhow::ensure!(
                entry.exists(),
                "{} is not built (workers/{language}/build.sh)",
                entry.display()
            );
            Command::new(entry)
        };
        command
            .arg("--templates")
            .arg(templates(language))
            .arg("--health-port")
            .arg(health.to_string())
            .env("TASKER_WORKER__ORCHESTRATOR_URL", &self.url)
            .env("TASKER_WORKER__REGISTER_TEMPLATES", "false");
        env_for(&mut command, &self.env);
        command.envs(vars.iter().copied());
        let process = Process::start(
            command,
            &format!("the {language} worker"),
            "tasker worker ready",
        )
        .await?;
        self.workers.insert(
            language,
            (process, format!("http://127.0.0.1:{health}/metrics")),
        );
        Ok(())
    }

    /// Creates one task; returns when it finished, with its latency from the create request.
    pub(crate) async fn one(&self, sc: &Scenario) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let task = self
            .client
            .create_task(&CreateTask::new(&sc.namespace, sc.template).context(sc.context.clone()))
            .await?;
        let state = self.done.wait(task.id, Duration::from_secs(120)).await?;
        anyhow::ensure!(state == "complete", "task {} ended {state}", task.id);
        Ok(started.elapsed())
    }

    /// Every `_batch_size` histogram of the orchestrator and the workers, as Prometheus text.
    pub(crate) async fn histograms(&self) -> Histograms {
        let mut sources = vec![("orchestrator".to_owned(), format!("{}/metrics", self.url))];
        for (language, (_, url)) in &self.workers {
            sources.push((format!("{language} worker"), url.clone()));
        }
        let mut all = Histograms::default();
        for (source, url) in sources {
            if let Ok(resp) = reqwest::get(&url).await
                && resp.status().is_success()
                && let Ok(text) = resp.text().await
            {
                all.parse(&source, &text);
            }
        }
        all
    }

    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        for (_, (p, _)) in self.workers {
            p.stop().await;
        }
        self.orchestrator.stop().await;
        self.env.cleanup().await
    }
}
