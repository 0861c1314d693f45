//! A worker's `/health` and `/metrics` listen on loopback unless `worker.health_bind` says
//! otherwise, in every language, so a probe from another host can reach them when asked to.

#[path = "../common/mod.rs"]
mod common;

use std::net::{IpAddr, SocketAddr, UdpSocket};

use anyhow::Context;
use tasker::{TestEnv, workspace_binary};

/// One of this machine's addresses other than loopback: the source address of a route out
/// (a UDP "connect" sends nothing).
fn machine_address() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("10.254.254.254:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_listens_on_loopback_unless_told_otherwise_in_every_language() -> anyhow::Result<()>
{
    let ip = machine_address().context("this machine has no address besides loopback")?;
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;

    // By default: loopback only, so the machine's own address is refused.
    let worker = common::start_worker(&env, "rust", "health-default", &o.url()).await?;
    let addr: SocketAddr = worker.health.parse()?;
    assert!(addr.ip().is_loopback(), "{addr}");
    // It answers (503 until its broker connection is up: reachability is what counts here).
    let health: serde_json::Value = reqwest::get(format!("http://{addr}/health"))
        .await?
        .json()
        .await?;
    assert_eq!(health["language"], "rust", "{health}");
    assert!(
        tokio::net::TcpStream::connect((ip, addr.port()))
            .await
            .is_err(),
        "/health answered on {ip} while bound to loopback"
    );
    drop(worker);

    for language in ["rust", "python", "ruby", "typescript"] {
        let worker = common::start_worker_with(
            &env,
            language,
            &format!("health-{language}"),
            &o.url(),
            &[
                ("TASKER_WORKER__HEALTH_BIND", "0.0.0.0"),
                ("TASKER_WORKER__HEALTH_PORT", "0"),
            ],
        )
        .await?;
        let port = worker.health.parse::<SocketAddr>()?.port();
        let health: serde_json::Value = reqwest::get(format!("http://{ip}:{port}/health"))
            .await
            .with_context(|| format!("{language}: /health on {ip}:{port}"))?
            .json()
            .await?;
        assert_eq!(health["language"], language, "{health}");
        let metrics = reqwest::get(format!("http://{ip}:{port}/metrics")).await?;
        assert!(metrics.status().is_success(), "{language}: /metrics");
        // The process's own families: its memory and CPU, whatever the language.
        let page = metrics.text().await?;
        let resident = tasker::scrape::sample(&page, "process_resident_memory_bytes");
        assert!(resident.is_some_and(|b| b > 1e6), "{language}: {page}");
        assert!(
            tasker::scrape::sample(&page, "process_cpu_seconds_total").is_some(),
            "{language}: {page}"
        );
    }

    // Not an address: the worker refuses to start and names the setting.
    let out = std::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .args(["--templates", &tasker::templates("rust").to_string_lossy()])
        .env("TASKER_WORKER__HEALTH_BIND", "nope")
        .env("RUST_BACKTRACE", "0")
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started with health_bind = nope");
    assert!(stderr.contains("HEALTH_BIND"), "{stderr}");
    o.stop().await;
    env.cleanup().await
}

/// A health port someone chose that another process holds stops the worker with an error naming
/// the address and the flag (a default port that is taken is replaced by a free one instead:
/// tests/fast/first_workflow.rs runs the README's quickstart while the demo's ports are held).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_health_port_in_use_is_named_with_the_flag() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let held = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = held.local_addr()?.port().to_string();
    let cfg = &env.config;
    let out = tokio::process::Command::new(workspace_binary("tasker-worker-rust")?)
        .args(["--templates", &tasker::templates("rust").to_string_lossy()])
        .args(["--health-port", &port, "--orchestrator-url", &o.url()])
        .env("AMQP_URL", &cfg.amqp_url)
        .env("TASKER_QUEUE_PREFIX", &cfg.queue_prefix)
        .env("RUST_BACKTRACE", "0")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out).await??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("127.0.0.1:{port}")) && stderr.contains("--health-port"),
        "{stderr}"
    );
    drop(held);
    o.stop().await;
    env.cleanup().await
}
