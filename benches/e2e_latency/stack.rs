//! The stack under test: orchestrators and Rust workers in this process (one of each, two for
//! tier 3), the workers of the other languages and a Rust worker as processes of their own
//! (tier 4), and tasks created and timed to their completion notification.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use uuid::Uuid;

use tasker::{Completions, RunningOrchestrator, RunningWorker, TestEnv, repo_root};
use tasker_client::CreateTask;
use tasker_shared::TaskState;

use super::RUST_WORKER;

pub(super) struct Stack {
    pub(super) env: TestEnv,
    pub(super) orchestrators: Vec<RunningOrchestrator>,
    pub(super) workers: Vec<RunningWorker>,
    pub(super) processes: Vec<tokio::process::Child>,
}

impl Stack {
    /// `n` tasks asleep for an hour (one wait step each) while the benchmark runs
    /// (`TASKER_BENCH_SLEEPING`): timers must cost the hot path nothing.
    pub(super) async fn sleepers(&self, n: usize) -> anyhow::Result<()> {
        let client = &self.orchestrators[0].client;
        let yaml = "namespace: bench_sleepers\nname: hour\nversion: '1'\nsteps:\n  - name: nap\n    wait: {sleep: 1h}\n";
        client
            .register_template(yaml, Some("hour.yaml"), None)
            .await?;
        let created: Vec<anyhow::Result<()>> = futures_util::stream::iter(0..n)
            .map(|_| async move {
                client
                    .create_task(&tasker_client::CreateTask::new("bench_sleepers", "hour"))
                    .await?;
                anyhow::Ok(())
            })
            .buffer_unordered(16)
            .collect()
            .await;
        created.into_iter().collect()
    }

    pub(super) async fn start() -> anyhow::Result<Stack> {
        let mut env = TestEnv::new().await.map_err(|e| {
            anyhow::anyhow!(
                "{e:#}\nStart the services first: `cargo make services-start` (or run `cargo make bench`)"
            )
        })?;
        env.config.orchestrator.sweep_interval_ms = 1_000;
        env.config.orchestrator.templates = vec![repo_root().join("tests/fixtures/task_templates")];
        let orchestrator = env.orchestrator().await?;
        let worker = env.rust_worker();
        Ok(Stack {
            env,
            orchestrators: vec![orchestrator],
            workers: vec![worker],
            processes: Vec::new(),
        })
    }

    /// Tier 3: a second orchestrator and a second Rust worker.
    pub(super) async fn grow(&mut self) -> anyhow::Result<()> {
        self.orchestrators.push(self.env.orchestrator().await?);
        self.workers.push(self.env.rust_worker());
        Ok(())
    }

    /// Starts a language's worker process (`workers/<lang>/conformance-worker`); for `rust`,
    /// this program as a Rust worker process ([`RUST_WORKER`]) for the Rust templates under
    /// the namespace `rust_process_examples`: the same fixture handlers as the in-process
    /// worker of tier 1, across a process boundary as every FFI worker is.
    pub(super) async fn language_worker(&mut self, language: &str) -> anyhow::Result<()> {
        let (mut command, templates) = if language == "rust" {
            let mut command = tokio::process::Command::new(std::env::current_exe()?);
            command.env(RUST_WORKER, "1");
            (command, rust_process_templates()?)
        } else {
            let entry = repo_root()
                .join("workers")
                .join(language)
                .join("conformance-worker");
            anyhow::ensure!(entry.exists(), "{} is not built", entry.display());
            (
                tokio::process::Command::new(entry),
                tasker::templates(language),
            )
        };
        let cfg = &self.env.config;
        let mut child = command
            .arg("--templates")
            .arg(templates)
            .arg("--health-port")
            .arg("0")
            .env("DATABASE_URL", &cfg.database_url)
            .env("AMQP_URL", &cfg.amqp_url)
            .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
            .env(
                "TASKER_WORKER__ORCHESTRATOR_URL",
                self.orchestrators[0].url(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if line.contains("tasker worker ready") {
                    return anyhow::Ok(());
                }
            }
            anyhow::bail!("the {language} worker exited before it was ready")
        })
        .await??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.processes.push(child);
        Ok(())
    }

    async fn create(
        &self,
        via: usize,
        namespace: &str,
        name: &str,
        context: &Value,
    ) -> anyhow::Result<Uuid> {
        let o = &self.orchestrators[via % self.orchestrators.len()];
        let task = o
            .client
            .create_task(&CreateTask::new(namespace, name).context(context.clone()))
            .await?;
        Ok(task.id)
    }

    /// `count` tasks at once, created round-robin from orchestrator `via`; returns the time
    /// until the last completion notification and the task ids.
    pub(super) async fn run(
        &self,
        via: usize,
        count: usize,
        namespace: &str,
        name: &str,
        context: &Value,
    ) -> anyhow::Result<(Duration, Vec<Uuid>)> {
        let mut completions: Vec<Completions> =
            self.orchestrators.iter().map(|o| o.completions()).collect();
        let started = Instant::now();
        let mut ids = Vec::with_capacity(count);
        for k in 0..count {
            ids.push(self.create(via + k, namespace, name, context).await?);
        }
        // Each task's completion is announced on the orchestrator it was created on (directly,
        // or relayed from PostgreSQL NOTIFY if another orchestrator finished it).
        for (k, id) in ids.iter().enumerate() {
            let rx = &mut completions[(via + k) % self.orchestrators.len()];
            let state = rx.wait_for(*id, Duration::from_secs(60)).await?;
            anyhow::ensure!(state == TaskState::Complete, "task {id} ended {state}");
        }
        Ok((started.elapsed(), ids))
    }
}

/// The Rust fixture templates under the namespace `rust_process_examples`, written to a folder
/// of the target directory, for the Rust worker process.
fn rust_process_templates() -> anyhow::Result<std::path::PathBuf> {
    let dir = tasker::target_dir()
        .join("e2e_latency")
        .join("rust_process_templates");
    std::fs::create_dir_all(&dir)?;
    for name in ["linear", "diamond"] {
        let src = std::fs::read_to_string(tasker::templates("rust").join(format!("{name}.yaml")))?;
        let moved = src.replace(
            "namespace: rust_examples",
            "namespace: rust_process_examples",
        );
        anyhow::ensure!(moved != src, "{name}.yaml names no rust_examples namespace");
        std::fs::write(dir.join(format!("{name}.yaml")), moved)?;
    }
    Ok(dir)
}
