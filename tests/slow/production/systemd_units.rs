//! The systemd units of `deploy/systemd/` as systemd runs them (docs/production.md, "systemd").
//! PID 1 is not systemd where the tests run, so this test is the service manager: it reads each
//! unit (and checks it with `systemd-analyze verify`, which `cargo-make/ensure-deps.sh units`
//! installs), then starts its `ExecStart=` as written, `%i` its instance, with the environment
//! the unit gives (systemd's `PATH`, its `Environment=`, then its `EnvironmentFile=`s: the
//! shipped examples with this test's services written after them) and nothing inherited, in `/`, the installed paths
//! (`/usr/local/bin/`, `/etc/tasker/`) mapped to this build and a folder of the test's. The
//! orchestrator and Rust worker so started run a task; each then stops on the unit's
//! `KillSignal=` within its `TimeoutStopSec=`: exit 0, its last line saying it stopped.
//! Not covered: what only systemd applies (`User=`, the sandboxing, `LimitNOFILE=`, restarts).

#[path = "unit_file.rs"]
mod unit_file;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Child;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::time::Instant;

use tasker::{TestEnv, templates, workspace_binary};
use tasker_client::{Client, ClientOptions, CreateTask};
use unit_file::{Installed, TempDir, Unit, deploy, parse_unit, timespan};

const ORCHESTRATOR: &str = "tasker-orchestrator@.service";
const WORKER: &str = "tasker-worker@.service";
/// How long an orchestrator lets requests in progress finish once told to stop (`SHUTDOWN_GRACE`
/// in tasker-orchestration/src/serve.rs).
const ORCHESTRATOR_GRACE: Duration = Duration::from_secs(30);

/// A unit's process as started, its stdout and stderr read line by line (never blocking it).
#[derive(Debug)]
struct Running {
    unit: String,
    child: Child,
    stdout: UnboundedReceiver<String>,
    stderr: UnboundedReceiver<String>,
    kill_signal: String,
    stop_within: Duration,
}

fn lines(from: impl AsyncRead + Unpin + Send + 'static) -> UnboundedReceiver<String> {
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(from).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
    rx
}

impl Running {
    fn start(unit: &Unit, root: &Installed) -> anyhow::Result<Running> {
        let env = unit.environment(root)?;
        let mut child = unit
            .command(root, &env)?
            .spawn()
            .with_context(|| format!("starting {}", unit.name))?;
        Ok(Running {
            unit: unit.name.clone(),
            stdout: lines(child.stdout.take().context("stdout")?),
            stderr: lines(child.stderr.take().context("stderr")?),
            child,
            kill_signal: unit.service("KillSignal")?.to_owned(),
            stop_within: timespan(unit.service("TimeoutStopSec")?)?,
        })
    }

    /// The first line of its stdout (`stdout`) or stderr containing `needle`, within `within`;
    /// on failure, the error names its stderr so far.
    async fn line(
        &mut self,
        stdout: bool,
        needle: &str,
        within: Duration,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + within;
        let mut stderr = Vec::new();
        let why = loop {
            let from = if stdout {
                &mut self.stdout
            } else {
                &mut self.stderr
            };
            match tokio::time::timeout_at(deadline, from.recv()).await {
                Ok(Some(line)) if line.contains(needle) => return Ok(line),
                Ok(Some(line)) if !stdout => stderr.push(line),
                Ok(Some(_)) => {}
                Ok(None) => break "exited before printing",
                Err(_) => break "did not print within the time allowed:",
            }
        };
        // What it said on stderr, for a second more (its last lines may still be on their way).
        let more = Instant::now() + Duration::from_secs(1);
        while let Ok(Some(line)) = tokio::time::timeout_at(more, self.stderr.recv()).await {
            stderr.push(line);
        }
        anyhow::bail!(
            "{} {why} {needle:?} ({within:?}); stderr: {stderr:#?}",
            self.unit
        )
    }

    /// Sends the unit's `KillSignal=`, as `systemctl stop` does, and checks that it exits 0
    /// within `TimeoutStopSec=`, logs no error, and logs `last` last.
    async fn stop(mut self, last: &str) -> anyhow::Result<()> {
        let pid = self.child.id().context("it exited already")?;
        let signal = self.kill_signal.trim_start_matches("SIG");
        let sent = std::process::Command::new("kill")
            .args(["-s", signal, &pid.to_string()])
            .status()?;
        anyhow::ensure!(sent.success(), "kill -s {signal} {pid}");
        let status = tokio::time::timeout(self.stop_within, self.child.wait())
            .await
            .with_context(|| {
                format!(
                    "{} still running {:?} after {}",
                    self.unit, self.stop_within, self.kill_signal
                )
            })??;
        // Its stderr to the end (its exit closed it), and what it had not been read of.
        let mut rest = Vec::new();
        while let Ok(Some(line)) =
            tokio::time::timeout(Duration::from_secs(10), self.stderr.recv()).await
        {
            rest.push(line);
        }
        anyhow::ensure!(status.success(), "{}: {status}: {rest:#?}", self.unit);
        anyhow::ensure!(
            rest.last().is_some_and(|l| l.contains(last)),
            "{} ends with {last:?}: {rest:#?}",
            self.unit
        );
        anyhow::ensure!(
            !rest.iter().any(|l| l.contains("ERROR")),
            "{} logged an error: {rest:#?}",
            self.unit
        );
        Ok(())
    }
}

/// The API's URL from the orchestrator's `tasker-orchestrator listening` line, JSON or text:
/// its `scheme` and the address it bound.
fn bound_url(line: &str) -> anyhow::Result<String> {
    let json = serde_json::from_str::<Value>(line).ok();
    let field = |name: &str| match &json {
        Some(event) => event[name].as_str().map(str::to_owned),
        None => line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_owned)),
    };
    match (field("scheme"), field("bind")) {
        (Some(scheme), Some(bind)) => Ok(format!("{scheme}://{bind}")),
        _ => anyhow::bail!("no scheme and address in {line}"),
    }
}

/// Polls `GET {url}{path}` until it answers 200 (at most `within`); its JSON.
async fn until_ok(url: &str, path: &str, within: Duration) -> anyhow::Result<Value> {
    let (deadline, http) = (Instant::now() + within, reqwest::Client::new());
    loop {
        let answer = http
            .get(format!("{url}{path}"))
            .timeout(Duration::from_secs(5))
            .send()
            .await;
        let last = match answer {
            Ok(r) if r.status() == reqwest::StatusCode::OK => return Ok(r.json().await?),
            Ok(r) => format!("{}: {}", r.status(), r.text().await.unwrap_or_default()),
            Err(e) => e.to_string(),
        };
        anyhow::ensure!(
            Instant::now() < deadline,
            "{url}{path} within {within:?}: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Copies of the units and of the worker's drop-in examples into `dir`, as installed: the
/// programs this build's (`systemd-analyze verify` wants them to exist; a drop-in's arguments
/// kept), no `User=`/`Group=` (no such user here). The instances to verify.
fn installed_copies(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let worker = workspace_binary("tasker-worker-rust")?;
    let bin = format!("{}/", worker.parent().context("bin")?.display());
    for unit in [ORCHESTRATOR, WORKER] {
        let text = std::fs::read_to_string(deploy().join(unit))?;
        let kept: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with("User=") && !l.starts_with("Group="))
            .map(|l| l.replace("/usr/local/bin/", &bin))
            .collect();
        std::fs::write(dir.join(unit), kept.join("\n") + "\n")?;
    }
    let mut instances = vec![
        dir.join("tasker-orchestrator@main.service"),
        dir.join("tasker-worker@rust-examples.service"),
    ];
    for entry in std::fs::read_dir(deploy().join("drop-ins"))? {
        let path = entry?.path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .context("a name")?;
        let instance = format!("tasker-worker@{stem}-example.service");
        let text = std::fs::read_to_string(&path)?;
        let lines: Vec<String> = text
            .lines()
            .map(
                |l| match l.strip_prefix("ExecStart=").filter(|c| !c.is_empty()) {
                    Some(command) => {
                        let args = command.split_once(' ').map_or("", |(_, a)| a);
                        format!("ExecStart={} {args}", worker.display())
                    }
                    None => l.to_owned(),
                },
            )
            .collect();
        let drop_in = dir.join(format!("{instance}.d"));
        std::fs::create_dir_all(&drop_in)?;
        std::fs::write(drop_in.join("command.conf"), lines.join("\n") + "\n")?;
        instances.push(dir.join(instance));
    }
    Ok(instances)
}

#[test]
fn the_units_verify_and_outlast_a_graceful_stop() -> anyhow::Result<()> {
    let worker_grace =
        Duration::from_millis(tasker_shared::Config::default().worker.shutdown_timeout_ms);
    Unit::read(ORCHESTRATOR, "main")?.check(ORCHESTRATOR_GRACE)?;
    Unit::read(WORKER, "rust-examples")?.check(worker_grace)?;
    for entry in std::fs::read_dir(deploy().join("drop-ins"))? {
        let path = entry?.path();
        let settings = parse_unit(&std::fs::read_to_string(&path)?)?;
        let exec: Vec<&str> = settings
            .iter()
            .filter(|(s, k, _)| s == "Service" && k == "ExecStart")
            .map(|(_, _, v)| v.as_str())
            .collect();
        anyhow::ensure!(
            exec.len() == 2 && exec[0].is_empty(),
            "{}: `ExecStart=` (emptied) then the command: {exec:?}",
            path.display()
        );
    }

    let Ok(version) = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
    else {
        anyhow::bail!(
            "systemd-analyze is missing: `cargo-make/ensure-deps.sh units` installs it \
             (cargo-make/test.sh does)"
        );
    };
    let version = String::from_utf8_lossy(&version.stdout);
    let release: u32 = version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("systemd-analyze --version: {version}"))?;
    let dir = TempDir::new("systemd-verify")?;
    let instances = installed_copies(&dir.0)?;
    let mut verify = std::process::Command::new("systemd-analyze");
    verify.args(["verify", "--man=no"]);
    if release >= 250 {
        // Not the units they are ordered after (postgresql.service …), whatever this host has.
        verify.arg("--recursive-errors=no");
    }
    let out = verify.args(&instances).output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Warnings (an unknown key, a value it cannot parse) exit 0 too: none may name our units.
    let ours: Vec<&str> = stderr.lines().filter(|l| l.contains("tasker-")).collect();
    anyhow::ensure!(
        out.status.success() && ours.is_empty(),
        "systemd-analyze verify ({}): {stderr}",
        out.status
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_units_run_a_task_and_stop_on_their_kill_signal() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    // As in production, the API requires tokens: the worker and this test speak as one.
    let token = env.require_tokens("systemd-ops").await?;
    let cfg = env.config.clone();
    let root = Installed::new()?;
    root.install("tasker.env", "tasker.env.example")?;
    root.install("orchestrator.toml", "orchestrator.toml.example")?;
    let ca = cfg.tls_ca_file.as_ref().map(|f| f.display().to_string());
    let mut shared = vec![
        ("AMQP_URL", cfg.amqp_url.as_str()),
        ("TASKER_QUEUE_PREFIX", cfg.queue_prefix.as_str()),
        ("TASKER_BROKER__QUEUE_TYPE", cfg.broker.queue_type.as_str()),
    ];
    shared.extend(ca.as_deref().map(|ca| ("TASKER_TLS_CA_FILE", ca)));
    let mut values = vec![("DATABASE_URL", cfg.database_url.as_str())];
    values.extend_from_slice(&shared);
    root.write_env(
        "orchestrator.env",
        Some("orchestrator.env.example"),
        &values,
    )?;
    // The instance's own file, as with two orchestrators on a host: its address (port 0: a
    // free one, which it logs).
    let bind = [("TASKER_ORCHESTRATOR__BIND", "127.0.0.1:0")];
    root.write_env("orchestrator-main.env", None, &bind)?;

    let mut o = Running::start(&Unit::read(ORCHESTRATOR, "main")?, &root)?;
    let listening = o
        .line(
            false,
            "tasker-orchestrator listening",
            Duration::from_secs(60),
        )
        .await?;
    let url = bound_url(&listening)?;
    let ready = until_ok(&url, "/ready", Duration::from_secs(60)).await?;
    assert_eq!(
        (&ready["database"], &ready["broker"]),
        (&json!(true), &json!(true))
    );

    let fixtures = templates("rust");
    let mut values = shared.clone();
    values.extend([
        ("TASKER_WORKER__API_TOKEN", token.as_str()),
        ("TASKER_WORKER__ORCHESTRATOR_URL", url.as_str()),
        (
            "TASKER_WORKER__TEMPLATES",
            fixtures.to_str().context("UTF-8")?,
        ),
        ("TASKER_WORKER__HEALTH_PORT", "0"),
    ]);
    let example = Some("worker.env.example");
    root.write_env("worker-rust-examples.env", example, &values)?;
    let mut w = Running::start(&Unit::read(WORKER, "rust-examples")?, &root)?;
    let up = w
        .line(true, "tasker worker ready", Duration::from_secs(90))
        .await?;
    let health = up
        .split_whitespace()
        .find_map(|w| w.strip_prefix("health="))
        .with_context(|| format!("no health address in {up}"))?;
    until_ok(
        &format!("http://{health}"),
        "/health",
        Duration::from_secs(10),
    )
    .await?;

    let options = ClientOptions {
        token: Some(token),
        tls_ca_file: None,
    };
    let client = Client::with_options(&url, &options)?;
    let task = client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?;
    let done = client.task(task.id, Some(Duration::from_secs(30))).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    assert_eq!(done.result, Some(json!({"halve": {"value": 242}})));

    // As `systemctl stop` on the host: the worker, then the orchestrator.
    w.stop("tasker worker stopped").await?;
    o.stop("tasker-orchestrator stopped").await?;
    env.cleanup().await
}
