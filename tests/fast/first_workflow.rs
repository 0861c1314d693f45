//! The README's "Your first workflow", executed as written for Python, Ruby and TypeScript: its
//! template and handler files are written to a fresh folder, its worker command starts a worker
//! against an orchestrator that was started with no templates, and its submit command runs the
//! first task to completion, all with the identities of the demo (`source .tasker/demo/env`:
//! the admin token and its broker user; the orchestrator requires tokens and has a broker user
//! of its own). The Rust worker does the same with a template of its own in a
//! brand-new namespace. Nothing restarts the orchestrator. The commands run as written while the
//! demo's ports are held (by the demo, or by listeners of this test standing in for it): a
//! worker whose default health port is taken still starts.

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context;
use tasker::{RunningOrchestrator, TestEnv, repo_root, workspace_binary};
use tokio::process::Command;

/// The README's section, from its heading to the next one.
fn section() -> anyhow::Result<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md"))?;
    let start = readme
        .find("## Your first workflow")
        .context("README has no `## Your first workflow`")?;
    let rest = &readme[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i);
    Ok(rest[..end].to_owned())
}

/// Fenced blocks of `text` as (language, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((lang.to_owned(), body.join("\n") + "\n"));
        }
    }
    out
}

/// Writes every block whose first line names a file (`# hello/...` or `// hello/...`) under
/// `dir`, and returns the shell blocks.
fn write_files(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut shell = Vec::new();
    for (lang, body) in blocks(&section()?) {
        let first = body.lines().next().unwrap_or_default();
        let named = first
            .strip_prefix("# ")
            .or_else(|| first.strip_prefix("// "))
            .filter(|f| f.starts_with("hello/"));
        match named {
            Some(file) => {
                let path = dir.join(file);
                std::fs::create_dir_all(path.parent().context("file path")?)?;
                std::fs::write(path, &body)?;
            }
            None if lang == "sh" => shell.push(body),
            None => {}
        }
    }
    Ok(shell)
}

/// The commands under `# <heading>` in the worker block (up to the next comment line).
fn commands(shell: &[String], heading: &str) -> anyhow::Result<Vec<String>> {
    let block = shell
        .iter()
        .find(|b| b.contains(&format!("# {heading}")))
        .with_context(|| format!("no `# {heading}` commands in the README"))?;
    Ok(block
        .lines()
        .skip_while(|l| !l.starts_with(&format!("# {heading}")))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect())
}

/// The demo's ports: its orchestrator, its Rust worker's health port (the workers' default) and
/// the Ruby, Python and TypeScript workers' (cargo-make/demo.sh).
const DEMO_PORTS: [u16; 5] = [8080, 8100, 8200, 8300, 8400];

/// Holds the demo's ports for this test binary's life, each with a listener of its own unless
/// another process (the demo itself) holds it already: either way, taken.
fn hold_demo_ports() {
    static HELD: OnceLock<Vec<std::net::TcpListener>> = OnceLock::new();
    HELD.get_or_init(|| {
        DEMO_PORTS
            .iter()
            .filter_map(|port| std::net::TcpListener::bind(("127.0.0.1", *port)).ok())
            .collect()
    });
}

/// What `source .tasker/demo/env` gives a user of the demo (cargo-make/lib/identities.sh): the
/// admin token, for the CLI and a worker of their own, and the broker user bound to it, which
/// may read every namespace's steps and write results only.
struct DemoEnv {
    token: String,
    amqp_url: String,
}

/// Sets `env` up as the demo runs: its orchestrators require tokens and speak to the broker as
/// their own user, not `guest` (its URL is returned); a user has [`DemoEnv`].
async fn as_the_demo(env: &mut TestEnv) -> anyhow::Result<(DemoEnv, String)> {
    let (admin, amqp_url) = env.worker_user("admin", &["*"])?;
    let token = env.require_tokens(&admin).await?;
    let (_, orchestrator) = env.orchestrator_user()?;
    Ok((DemoEnv { token, amqp_url }, orchestrator))
}

/// The README's `line` in `dir`, in the environment `source .tasker/demo/env` gives a user of
/// the demo: the orchestrator's URL (here the test's), the admin token and its broker user for
/// the CLI and the worker. Nothing else: the worker's health port is its default, which the
/// demo holds.
fn shell(
    env: &TestEnv,
    demo: &DemoEnv,
    orchestrator: &RunningOrchestrator,
    dir: &Path,
    line: &str,
) -> Command {
    let cfg = &env.config;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("exec {line}"))
        .current_dir(dir)
        .env_remove("AMQP_URL")
        .env("TASKER_AMQP_URL", &demo.amqp_url)
        .env("TASKER_TOKEN", &demo.token)
        .env("TASKER_WORKER__API_TOKEN", &demo.token)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("TASKER_WORKER__ORCHESTRATOR_URL", orchestrator.url())
        .env("TASKER_URL", orchestrator.url())
        .env("NO_COLOR", "1")
        .kill_on_drop(true);
    cmd
}

/// A fresh folder with `workers` (the built bindings) linked in, as in the repository.
fn project(label: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("tasker-first-{label}-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    std::os::unix::fs::symlink(repo_root().join("workers"), dir.join("workers"))?;
    Ok(dir)
}

async fn readme_path(language: &str, heading: &str) -> anyhow::Result<()> {
    hold_demo_ports();
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let (demo, own) = as_the_demo(&mut env).await?;
    let services = std::mem::replace(&mut env.config.amqp_url, own);
    let o = env.orchestrator().await?;
    env.config.amqp_url = services;
    let unknown = o
        .client
        .create_task(&tasker_client::CreateTask::new("hello", "greet"))
        .await
        .expect_err("the orchestrator starts without the template");
    assert!(
        unknown.to_string().contains("unknown_template"),
        "{unknown}"
    );

    let dir = project(language)?;
    let shell_blocks = write_files(&dir)?;
    let mut steps = commands(&shell_blocks, heading)?;
    let worker_line = steps.pop().context("no worker command")?;
    for line in steps {
        let status = shell(&env, &demo, &o, &dir, &line)
            .stdout(Stdio::null())
            .status()
            .await?;
        anyhow::ensure!(status.success(), "`{line}` failed: {status}");
    }
    let mut worker =
        tasker::start_until_ready(&mut shell(&env, &demo, &o, &dir, &worker_line), language)
            .await?;

    // The README's submit line, with this build's CLI for target/release/tasker.
    let submit = shell_blocks
        .iter()
        .flat_map(|b| b.lines())
        .find(|l| l.contains("tasker submit hello greet"))
        .context("no submit command in the README")?
        .replace(
            "target/release/tasker",
            &workspace_binary("tasker")?.display().to_string(),
        );
    let out = shell(&env, &demo, &o, &dir, &submit).output().await?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{submit}: {stdout}{out:?}");
    assert!(stdout.contains("state    complete"), "{stdout}");
    assert!(
        stdout.contains(r#"{"shout":{"greeting":"HELLO, ADA!"}}"#),
        "{stdout}"
    );
    let registered = o.client.template("hello", "greet", None).await?;
    // By the worker, on the token `source .tasker/demo/env` gave it.
    let by = registered.registered_by.unwrap_or_default();
    assert!(
        by.starts_with(&format!(
            "token:{}-admin (as worker:{language}:",
            env.config.queue_prefix
        )),
        "{by}"
    );

    worker.kill().await?;
    o.stop().await;
    std::fs::remove_dir_all(&dir)?;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_first_workflow() -> anyhow::Result<()> {
    readme_path("python", "Python").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_first_workflow() -> anyhow::Result<()> {
    readme_path("ruby", "Ruby").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_first_workflow() -> anyhow::Result<()> {
    readme_path("typescript", "TypeScript").await
}

/// `tasker-worker-rust --templates templates` in `dir`, registering with `orchestrator`.
fn rust_worker(env: &TestEnv, orchestrator: &str, dir: &Path) -> anyhow::Result<Command> {
    let mut cmd = Command::new(workspace_binary("tasker-worker-rust")?);
    cmd.args(["--templates", "templates", "--health-port", "0"])
        .args(["--orchestrator-url", orchestrator])
        .current_dir(dir)
        .env("DATABASE_URL", &env.config.database_url)
        .env("AMQP_URL", &env.config.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &env.config.queue_prefix)
        .env("NO_COLOR", "1")
        .kill_on_drop(true);
    Ok(cmd)
}

/// The Rust worker registers a template in a namespace no orchestrator has seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_first_workflow() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    let dir = project("rust")?;
    std::fs::create_dir_all(dir.join("templates"))?;
    std::fs::write(
        dir.join("templates/calc.yaml"),
        "namespace: calc\nname: twice_plus_ten\nversion: 1.0.0\nsteps:\n  - name: twice\n    \
         handler: double\n  - name: plus\n    handler: add_ten\n    depends_on: [twice]\n",
    )?;
    let mut worker =
        tasker::start_until_ready(&mut rust_worker(&env, &o.url(), &dir)?, "rust").await?;
    let task = o
        .run_task("calc", "twice_plus_ten", serde_json::json!({"value": 4}))
        .await?;
    assert_eq!(task.state, "complete", "{task:?}");
    assert_eq!(
        task.result,
        Some(serde_json::json!({"plus": {"value": 18}}))
    );
    worker.kill().await?;
    o.stop().await;
    std::fs::remove_dir_all(&dir)?;
    env.cleanup().await
}

/// A worker whose orchestrator is down starts anyway, and registers once one answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_without_an_orchestrator_and_registers_when_one_answers()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = project("later")?;
    std::fs::create_dir_all(dir.join("templates"))?;
    std::fs::write(
        dir.join("templates/later.yaml"),
        "namespace: calc\nname: later\nversion: 1.0.0\nsteps:\n  - name: only\n    \
         handler: double\n",
    )?;
    // Ready although nothing answers at `url`.
    let mut worker = tasker::start_until_ready(&mut rust_worker(&env, &url, &dir)?, "rust").await?;

    let o = RunningOrchestrator::start_on(env.config.clone(), &format!("127.0.0.1:{port}")).await?;
    // Subscribed before looking, so a registration is either seen in the database or announced.
    let mut events = o.events().subscribe();
    if o.client
        .templates(Some("calc"), Some("later"))
        .await?
        .is_empty()
    {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let tasker_orchestration::events::Event::TemplateRegistered { .. } =
                    events.recv().await?
                {
                    return anyhow::Ok(());
                }
            }
        })
        .await
        .context("the worker did not register within 30 s of the orchestrator starting")??;
    }
    let registered = o.client.template("calc", "later", None).await?;
    let by = registered.registered_by.unwrap_or_default();
    assert!(by.starts_with("worker:rust:"), "{by}");
    let task = o
        .run_task("calc", "later", serde_json::json!({"value": 5}))
        .await?;
    assert_eq!(
        task.result,
        Some(serde_json::json!({"only": {"value": 10}}))
    );
    worker.kill().await?;
    o.stop().await;
    std::fs::remove_dir_all(&dir)?;
    env.cleanup().await
}

/// A worker whose template changes a registered version does not start, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_a_changed_definition_under_a_registered_version_does_not_start()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    let template = |handler: &str| {
        format!(
            "namespace: calc\nname: one\nversion: 1.0.0\nsteps:\n  - name: only\n    \
             handler: {handler}\n"
        )
    };
    o.client
        .register_template(&template("double"), None, Some("ada"))
        .await?;
    let dir = project("conflict")?;
    std::fs::create_dir_all(dir.join("templates"))?;
    std::fs::write(dir.join("templates/one.yaml"), template("square"))?;
    let out = rust_worker(&env, &o.url(), &dir)?.output().await?;
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("template_version_conflict"), "{stderr}");
    assert!(stderr.contains("one.yaml"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("tasker worker ready"),
        "it must not report ready"
    );
    o.stop().await;
    std::fs::remove_dir_all(&dir)?;
    env.cleanup().await
}
