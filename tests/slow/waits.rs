//! Waiting callers ride through restarts: each client's wait (Rust, Python, TypeScript, Ruby)
//! and the CLI's `submit --wait` go through a TCP proxy that is killed while their long poll is
//! in flight and started again on the same port after an outage of at least 1.5 s. The task
//! cannot finish early: it waits for a signal, sent (straight to the orchestrator) only once the
//! proxy is down, so a client that does not retry its dropped poll and its refused connections
//! fails, and one that does returns the finished task.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use uuid::Uuid;

use tasker::proxy::Proxy;
use tasker::{RunningOrchestrator, RunningWorker, TestEnv, repo_root, workspace_binary};

/// The shortest outage the clients ride through: the proxy's port refuses connections at least
/// this long (the scenario's length, not a wait for something to happen).
const OUTAGE: Duration = Duration::from_millis(1_500);
/// What a long poll carries in its query string.
const POLL: &str = "wait=";

/// A `rust_examples/signal_wait` task: it finishes only once it gets the signal `approved`.
async fn held_task(o: &RunningOrchestrator) -> anyhow::Result<Uuid> {
    let task = o
        .client
        .create_task(
            &tasker_client::CreateTask::new("rust_examples", "signal_wait")
                .context(json!({"value": 5})),
        )
        .await?;
    Ok(task.id)
}

/// A test's world: an orchestrator, a Rust worker for the fixtures, a proxy in front of the
/// orchestrator and a task held until its signal.
struct Scene {
    env: TestEnv,
    o: RunningOrchestrator,
    worker: RunningWorker,
    proxy: Proxy,
    id: Uuid,
}

impl Scene {
    async fn new() -> anyhow::Result<Scene> {
        let env = TestEnv::new().await?;
        let o = env.orchestrator().await?;
        let worker = env.rust_worker();
        let proxy = Proxy::start(&o.url()).await?;
        let id = held_task(&o).await?;
        Ok(Scene {
            env,
            o,
            worker,
            proxy,
            id,
        })
    }

    async fn end(self) -> anyhow::Result<()> {
        self.worker.stop().await;
        self.o.stop().await;
        self.env.cleanup().await
    }
}

/// With a client's long poll for task `id` in flight through `proxy`: kills the proxy, lets the
/// task finish while it is down (at least [`OUTAGE`]), and starts it again.
async fn outage(proxy: &mut Proxy, o: &RunningOrchestrator, id: Uuid) -> anyhow::Result<()> {
    proxy.until_sent(POLL, 1, Duration::from_secs(30)).await?;
    let polls = proxy.sent_count(POLL);
    proxy.stop();
    let down = Instant::now();
    o.client
        .signal(id, "approved", Some(json!({"approved_by": "waits"})), None)
        .await?;
    let done = o.wait(id).await?;
    assert_eq!(done.state, "complete", "{done:?}");
    tokio::time::sleep(OUTAGE.saturating_sub(down.elapsed())).await;
    proxy.restart().await?;
    // The client comes back by itself: a poll after the restart.
    proxy
        .until_sent(POLL, polls + 1, Duration::from_secs(10))
        .await
        .context("the client did not poll again after the restart")
}

/// Runs `workers/<language>/conformance-client URL wait ID` and returns what it printed (the
/// task as JSON), once it exited 0.
async fn language_wait(language: &str, url: String, id: Uuid) -> anyhow::Result<Value> {
    let script = repo_root()
        .join("workers")
        .join(language)
        .join("conformance-client");
    let out = tokio::process::Command::new(&script)
        .args([url, "wait".into(), id.to_string()])
        .kill_on_drop(true)
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "{} wait: {}\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// One client's wait through a proxy restarted mid-poll: `waiter` (given the proxy's URL and the
/// task) must return the finished task as JSON.
async fn rides_through<F, Fut>(waiter: F) -> anyhow::Result<()>
where
    F: FnOnce(String, Uuid) -> Fut,
    Fut: Future<Output = anyhow::Result<Value>> + Send + 'static,
{
    let mut scene = Scene::new().await?;
    let id = scene.id;
    let waiting = tokio::spawn(waiter(scene.proxy.url(), id));
    outage(&mut scene.proxy, &scene.o, id).await?;
    let task = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .context("the wait did not return within 30 s of the restart")???;
    assert_eq!(task["id"], json!(id), "{task}");
    assert_eq!(task["state"], "complete", "{task}");
    assert_eq!(task["result"]["finish"]["approved_by"], "waits", "{task}");
    scene.end().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_client_wait_rides_through_a_restart() -> anyhow::Result<()> {
    rides_through(|url, id| async move {
        let client = tasker_client::Client::new(&url);
        Ok(serde_json::to_value(
            client.wait(id, Duration::from_secs(60)).await?,
        )?)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_wait_rides_through_a_restart() -> anyhow::Result<()> {
    rides_through(|url, id| language_wait("python", url, id)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_client_wait_rides_through_a_restart() -> anyhow::Result<()> {
    rides_through(|url, id| language_wait("typescript", url, id)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruby_client_wait_rides_through_a_restart() -> anyhow::Result<()> {
    rides_through(|url, id| language_wait("ruby", url, id)).await
}

/// `tasker submit --wait` through the proxy: it says the task's id at once (on stderr, before
/// the task finishes), rides through the restart and prints the finished task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_submit_wait_says_the_task_and_rides_through_a_restart() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let worker = env.rust_worker();
    let mut proxy = Proxy::start(&o.url()).await?;
    let mut cli = tokio::process::Command::new(workspace_binary("tasker")?)
        .args(["submit", "rust_examples", "signal_wait", "--context"])
        .arg(r#"{"value": 5}"#)
        .args(["--wait", "60", "--url"])
        .arg(proxy.url())
        .env_remove("TASKER_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut stderr = BufReader::new(cli.stderr.take().context("stderr")?).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), stderr.next_line())
        .await
        .context("the CLI said nothing for 20 s")??
        .context("the CLI closed stderr")?;
    let id: Uuid = first
        .strip_prefix("task ")
        .and_then(|rest| rest.split(':').next())
        .with_context(|| format!("no task id first on stderr: {first:?}"))?
        .parse()?;
    assert_eq!(o.client.task(id, None).await?.state, "running");
    outage(&mut proxy, &o, id).await?;
    let out = tokio::time::timeout(Duration::from_secs(30), cli.wait_with_output())
        .await
        .context("the CLI did not return within 30 s of the restart")??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}: {stdout}", out.status);
    assert!(stdout.contains(&format!("task     {id}")), "{stdout}");
    assert!(stdout.contains("state    complete"), "{stdout}");
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}

/// `Client::follow` (what `--wait`'s progress line reads): the task's state and steps done as
/// they change, its stream opened again after the proxy's restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_client_follow_sees_the_task_change_through_a_restart() -> anyhow::Result<()> {
    let mut scene = Scene::new().await?;
    let (o, id) = (&scene.o, scene.id);
    let mut events = tasker_client::Client::new(&scene.proxy.url()).follow(id);
    let first = tokio::time::timeout(Duration::from_secs(10), events.next()).await??;
    assert_eq!(
        (first.state.as_str(), first.progress()),
        ("running", (0, 2))
    );
    scene.proxy.stop();
    o.client
        .signal(id, "approved", Some(json!({"approved_by": "waits"})), None)
        .await?;
    assert_eq!(o.wait(id).await?.state, "complete");
    scene.proxy.restart().await?;
    let last = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let snapshot = events.next().await?;
            if snapshot.state == "complete" {
                return anyhow::Ok(snapshot);
            }
        }
    })
    .await
    .context("no complete snapshot within 30 s of the restart")??;
    assert_eq!(last.progress(), (2, 2), "{last:?}");
    scene.end().await
}
