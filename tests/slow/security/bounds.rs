//! Bounds that hold under a hostile byte stream, against real orchestrator processes: a
//! template that would cost minutes to parse is refused at once and costs nothing after the
//! answer (measured from /proc); 2,100 connections trickling bodies leave `/health` answering;
//! a 100 KB context filter answers within the statement timeout; each cap is refused with a
//! JSON error naming its bound; lists are paged. A healthy task beside each attack completes.

#[path = "bounds/connections.rs"]
mod connections;
#[path = "bounds/lists.rs"]
mod lists;
#[path = "../../common/mod.rs"]
mod processes;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tasker::{TestEnv, workspace_binary};
use tasker_client::CreateTask;
use uuid::Uuid;

use processes::{OrchestratorProcess, free_port, start_orchestrator_with};

/// An orchestrator process on a free port with `vars` (`TASKER_ORCHESTRATOR__…`); its URL.
async fn orchestrator(
    env: &TestEnv,
    vars: &[(&str, &str)],
) -> anyhow::Result<(OrchestratorProcess, String)> {
    let port = free_port()?;
    let o = start_orchestrator_with(env, port, vars).await?;
    Ok((o, format!("http://127.0.0.1:{port}")))
}

/// A request with an optional token and body; the status and the JSON answer (`null` if none).
async fn call(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<(&str, String)>,
) -> anyhow::Result<(StatusCode, Value)> {
    let mut req = reqwest::Client::new().request(method, url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some((kind, body)) = body {
        req = req.header("content-type", kind).body(body);
    }
    let resp = req.send().await?;
    let status = resp.status();
    Ok((status, resp.json().await.unwrap_or(Value::Null)))
}

/// Stops an orchestrator process and waits until it has.
async fn stop(mut o: OrchestratorProcess) -> anyhow::Result<()> {
    o.child.kill().await?;
    Ok(())
}

/// The error code and bound of a refusal.
fn refusal(answer: &Value) -> (&str, &str) {
    (
        answer["error"]["code"].as_str().unwrap_or(""),
        answer["error"]["details"]["bound"].as_str().unwrap_or(""),
    )
}

/// Runs a `rust_examples/linear` task to its end beside the attack, with a worker of this
/// process, and checks that it completed.
async fn a_healthy_task_completes(env: &mut TestEnv, url: &str) -> anyhow::Result<()> {
    env.config.worker.orchestrator_url = url.to_owned();
    let worker = env.rust_worker();
    let client = tasker_client::Client::with_options(
        url,
        &tasker_client::ClientOptions {
            token: env.config.worker.api_token.clone(),
            tls_ca_file: None,
        },
    )?;
    let task = client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?;
    let done = client.task(task.id, Some(Duration::from_secs(30))).await?;
    worker.stop().await;
    anyhow::ensure!(
        done.state == "complete",
        "the healthy task ended {}",
        done.state
    );
    Ok(())
}

/// The CPU time process `pid` and the children it reaped have used, in clock ticks.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat
        .rfind(')')
        .map(|i| &stat[i + 2..])
        .ok_or_else(|| anyhow::anyhow!("unreadable /proc/{pid}/stat"))?;
    // Fields 14 to 17: utime, stime, cutime, cstime (the name's field is 2, the state 3).
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    fields[11..15]
        .iter()
        .map(|f| Ok(f.parse::<u64>()?))
        .sum::<anyhow::Result<u64>>()
}

/// Clock ticks per second (`getconf CLK_TCK`).
fn ticks_per_second() -> anyhow::Result<u64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()?;
    Ok(String::from_utf8(out.stdout)?.trim().parse()?)
}

/// The processes `pid` started that still exist.
fn children(pid: u32) -> anyhow::Result<Vec<String>> {
    let mut all = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let listed = std::fs::read_to_string(task?.path().join("children")).unwrap_or_default();
        all.extend(listed.split_whitespace().map(str::to_owned));
    }
    Ok(all)
}

/// A mebibyte whose one stray quote, after a space, hid the rest from the old pre-scan: behind
/// it, flow mappings nested until the end (what took libyaml minutes).
fn stray_quote_mebibyte() -> String {
    let mut src = String::from(
        "namespace: bounds\nname: stray\nversion: '1'\ndescription: a \"\nsteps:\n  - name: s\n    \
         handler: h\n    retry: ",
    );
    while src.len() < 1024 * 1024 - 16 {
        src.push_str("{a: ");
    }
    src
}

/// Valid, within every bound of the pre-scan, and far longer to parse than 20 ms.
fn slow_but_valid() -> String {
    let values: Vec<String> = (0..45_000).map(|i| i.to_string()).collect();
    format!(
        "namespace: bounds\nname: slow\nversion: '1'\ncontext_schema: {{enum: [{}]}}\nsteps:\n  \
         - name: s\n    handler: double\n",
        values.join(", ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_would_cost_minutes_is_refused_at_once_and_costs_nothing_after()
-> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let (o, url) = orchestrator(
        &env,
        &[
            ("TASKER_ORCHESTRATOR__MAX_BODY_BYTES", "2097152"),
            ("TASKER_ORCHESTRATOR__TEMPLATE_PARSE_BUDGET_MS", "20"),
        ],
    )
    .await?;
    let pid = o.child.id().expect("running");
    let templates = format!("{url}/v1/templates");
    let yaml = |text: String| Some(("application/yaml", text));
    // The stray quote: refused by the pre-scan, at the line where the nesting goes too deep.
    let stray = stray_quote_mebibyte();
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let (status, answer) =
            call(reqwest::Method::POST, &templates, None, yaml(stray.clone())).await?;
        took.push(started.elapsed());
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["error"]["details"]["line"], 8, "{answer}");
    }
    took.sort();
    println!("1 MiB stray-quote template refused in {took:?}");
    // At once, where parsing it would take minutes: the bound is wide for a loaded machine (the
    // figure is what this prints; ~50 ms on an idle one).
    assert!(took[2] < Duration::from_secs(1), "median {:?}", took[2]);
    // One the scan passes but its parse outlives the budget (20 ms): its child is killed.
    let (status, answer) = call(
        reqwest::Method::POST,
        &templates,
        None,
        yaml(slow_but_valid()),
    )
    .await?;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert_eq!(
        (
            answer["error"]["details"]["problem"].as_str(),
            refusal(&answer).1
        ),
        (
            Some("too_slow_to_parse"),
            "orchestrator.template_parse_budget_ms"
        ),
        "{answer}"
    );
    // After the answers: no parser left, and no CPU spent (the old parse went on for minutes).
    assert_eq!(
        children(pid)?,
        Vec::<String>::new(),
        "a parser outlived its answer"
    );
    let before = cpu_ticks(pid)?;
    // A measurement window, not a wait for something to happen.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let spent = (cpu_ticks(pid)? - before) as f64 / ticks_per_second()? as f64;
    println!("CPU spent by the orchestrator in the 2 s after the refusals: {spent:.2} s");
    assert!(spent < 0.5, "{spent:.2} s of CPU after the refusal");
    a_healthy_task_completes(&mut env, &url).await?;
    the_cli_and_a_worker_refuse_it_at_once(&stray).await?;
    stop(o).await?;
    env.cleanup().await
}

/// The same file through `tasker templates validate` and in a Rust worker's folder: each
/// refuses it, naming the file and line, in the time it takes to start.
async fn the_cli_and_a_worker_refuse_it_at_once(stray: &str) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("tasker-bounds-{}", Uuid::now_v7()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("stray.yaml");
    std::fs::write(&file, stray)?;
    let started = Instant::now();
    let cli = std::process::Command::new(workspace_binary("tasker")?)
        .args(["templates", "validate"])
        .arg(&file)
        .output()?;
    let cli_took = started.elapsed();
    let started = Instant::now();
    let worker = tokio::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .arg("--templates")
        .arg(&dir)
        .env("TASKER_WORKER__HEALTH_PORT", "0")
        .kill_on_drop(true)
        .output();
    let worker = tokio::time::timeout(Duration::from_secs(30), worker).await??;
    let worker_took = started.elapsed();
    std::fs::remove_dir_all(&dir)?;
    println!("refused by the CLI in {cli_took:?}, by a Rust worker in {worker_took:?}");
    for (who, out) in [("the CLI", &cli), ("the worker", &worker)] {
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{who} accepted it");
        assert!(said.contains("stray.yaml:8"), "{who}: {said}");
        assert!(said.contains("nest"), "{who}: {said}");
    }
    assert!(cli_took < Duration::from_secs(5) && worker_took < Duration::from_secs(5));
    Ok(())
}
