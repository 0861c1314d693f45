//! Connections and what one token may hold: 2,100 slow bodies from one address while `/health`
//! answers from another; a token's requests and long polls capped while another token's are
//! not.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tasker::TestEnv;
use tasker_client::CreateTask;
use tasker_orchestration::store::{Scope, Store};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{a_healthy_task_completes, call, orchestrator, refusal, stop};

/// The attack of the issue: this many connections, each sending a byte now and then.
const ATTACKERS: usize = 2_100;

/// A request head whose body never comes (a byte, then silence: slower than any rate).
const HEAD: &[u8] =
    b"POST /v1/tasks HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
                      content-length: 100000\r\n\r\n{";

/// How a trickling connection ended: the answer's status, code and bound, or none.
type Ended = Option<(u16, String, String)>;

/// Reads what the server says until it closes: its status and the error's code and bound.
async fn ending(mut stream: TcpStream) -> Ended {
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1)?).ok()?;
    let (code, bound) = refusal(&body);
    Some((status, code.to_owned(), bound.to_owned()))
}

/// One attacker: from 127.0.0.2, the head and one byte of a 100 kB body, then nothing.
async fn trickle(server: SocketAddr) -> anyhow::Result<Ended> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind("127.0.0.2:0".parse()?)?;
    let mut stream = socket.connect(server).await?;
    // A connection refused at once may be closed before this is written: its answer is read.
    let _ = stream.write_all(HEAD).await;
    Ok(ending(stream).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_slow_bodies_leave_health_answering_every_probe() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let (o, url) = orchestrator(&env, &[]).await?;
    let server: SocketAddr = url.trim_start_matches("http://").parse()?;
    let started = Instant::now();
    let attack: Vec<_> = (0..ATTACKERS)
        .map(|_| tokio::spawn(trickle(server)))
        .collect();
    // Meanwhile, a probe from another address every 100 ms, each on a new connection.
    let probes = tokio::spawn({
        let health = format!("{url}/health");
        async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()?;
            let mut took = Vec::new();
            while took.len() < 100 {
                let asked = Instant::now();
                let status = client
                    .get(&health)
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await?
                    .status();
                took.push((status, asked.elapsed()));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            anyhow::Ok(took)
        }
    });
    let mut ended = Vec::with_capacity(ATTACKERS);
    for a in attack {
        ended.push(a.await??);
    }
    let attack_took = started.elapsed();
    let probes = probes.await??;
    let count = |status: u16, code: &str, bound: &str| {
        ended
            .iter()
            .filter(|e| e.as_ref() == Some(&(status, code.to_owned(), bound.to_owned())))
            .count()
    };
    let too_slow = count(
        408,
        "body_too_slow",
        "orchestrator.body_min_bytes_per_second",
    );
    let per_peer = count(
        429,
        "too_many_connections",
        "orchestrator.max_connections_per_peer",
    );
    let unanswered = ended.iter().filter(|e| e.is_none()).count();
    let slowest = probes.iter().map(|p| p.1).max().unwrap_or_default();
    println!(
        "{ATTACKERS} slow bodies ended in {attack_took:?}: {too_slow} answered 408 body_too_slow, \
         {per_peer} answered 429 too_many_connections, {unanswered} closed unanswered; \
         /health: {} probes, slowest {slowest:?}",
        probes.len()
    );
    assert_eq!(too_slow + per_peer + unanswered, ATTACKERS, "{ended:?}");
    assert!(too_slow >= 1 && too_slow <= ATTACKERS - per_peer);
    assert!(per_peer >= 1, "no connection was refused for its address");
    assert!(
        probes.iter().all(|(s, _)| *s == StatusCode::OK),
        "{probes:?}"
    );
    a_healthy_task_completes(&mut env, &url).await?;
    stop(o).await?;
    env.cleanup().await
}

/// A token named `name` of scope write for every namespace, made in the test's database.
async fn write_token(env: &TestEnv, name: &str) -> anyhow::Result<String> {
    let store = Store::connect(&env.config.database_url, 2).await?;
    let token = crate::common::make_token(&store, name, Scope::Write, None).await?;
    store.pool().close().await;
    Ok(token)
}

/// Holds a request of `token` in progress: a body that stops after its first byte, sent again
/// whenever it is refused for the token's requests (a probe held the slot at that instant).
async fn stall(url: String, token: String) -> anyhow::Result<()> {
    let head = format!(
        "POST /v1/tasks HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\r\n{{"
    );
    loop {
        let mut stream = TcpStream::connect(url.trim_start_matches("http://")).await?;
        stream.write_all(head.as_bytes()).await?;
        if ending(stream)
            .await
            .is_none_or(|(_, code, _)| code != "too_many_requests")
        {
            return Ok(());
        }
    }
}

/// Asks `ask` until it answers 429 with `code`, for at most 10 s: the requests it must crowd
/// out are on their way.
async fn until_refused<F, Fut>(code: &str, ask: F) -> anyhow::Result<Value>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<(StatusCode, Value)>>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, answer) = ask().await?;
        if status == StatusCode::TOO_MANY_REQUESTS && refusal(&answer).0 == code {
            return Ok(answer);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "never refused with {code}: {answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_holds_at_most_its_requests_and_long_polls() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    let writer = write_token(&env, "bounds-writer").await?;
    let other = write_token(&env, "bounds-other").await?;
    let (o, url) = orchestrator(
        &env,
        &[
            ("TASKER_ORCHESTRATOR__AUTH", "tokens"),
            ("TASKER_ORCHESTRATOR__MAX_WAITS_PER_TOKEN", "2"),
            ("TASKER_ORCHESTRATOR__MAX_REQUESTS_PER_TOKEN", "3"),
            // A body that stops holds its request until the silence bound (30 s).
            ("TASKER_ORCHESTRATOR__BODY_MIN_BYTES_PER_SECOND", "0"),
        ],
    )
    .await?;
    let client = tasker_client::Client::with_token(&url, Some(&writer));
    // No worker yet: the task runs until one comes.
    let task = client
        .create_task(&CreateTask::new("rust_examples", "linear").context(json!({"value": 6})))
        .await?;
    let wait = |secs: f64| format!("{url}/v1/tasks/{}?wait={secs}", task.id);
    // Two long polls, each asked again while a probe below holds the slot it needs.
    let polls: Vec<_> = (0..2)
        .map(|_| {
            let (url, token) = (wait(60.0), writer.clone());
            tokio::spawn(async move {
                loop {
                    let (status, answer) = call(Method::GET, &url, Some(&token), None).await?;
                    if refusal(&answer).0 != "too_many_waits" {
                        return anyhow::Ok((status, answer));
                    }
                }
            })
        })
        .collect();
    // A probe holds a slot only for the instant it reads (`wait=0`).
    let probe = wait(0.0);
    let refused = until_refused("too_many_waits", || {
        call(Method::GET, &probe, Some(&writer), None)
    })
    .await?;
    assert_eq!(
        refusal(&refused).1,
        "orchestrator.max_waits_per_token",
        "{refused}"
    );
    // Another token's long poll is its own.
    let (status, _) = call(Method::GET, &wait(0.1), Some(&other), None).await?;
    assert_eq!(status, StatusCode::OK);
    // A third request in progress (a body that stops: held until the silence bound), then a
    // fourth is refused.
    let stalled = tokio::spawn(stall(url.clone(), writer.clone()));
    let tasks = format!("{url}/v1/tasks");
    let refused = until_refused("too_many_requests", || {
        call(Method::GET, &tasks, Some(&writer), None)
    })
    .await?;
    assert_eq!(
        refusal(&refused).1,
        "orchestrator.max_requests_per_token",
        "{refused}"
    );
    let (status, _) = call(Method::GET, &tasks, Some(&other), None).await?;
    assert_eq!(status, StatusCode::OK);
    // Its work done, each slot comes back: the task completes and the long polls answer it.
    stalled.abort();
    env.config.worker.api_token = Some(writer.clone());
    env.config.worker.orchestrator_url = url.clone();
    let worker = env.rust_worker();
    for p in polls {
        let (status, answer) = p.await??;
        assert_eq!(
            (status, answer["state"].as_str()),
            (StatusCode::OK, Some("complete"))
        );
    }
    worker.stop().await;
    a_healthy_task_completes(&mut env, &url).await?;
    let (status, _) = call(Method::GET, &tasks, Some(&writer), None).await?;
    assert_eq!(status, StatusCode::OK);
    stop(o).await?;
    env.cleanup().await
}
