//! Any number of dashboard tabs stay live (`tests/dashboard/tabs.mjs`): ten task pages in one
//! browser share one connection and each shows its task complete when it ends; one stream of
//! several tasks (`GET /v1/events?tasks=…`) says which it cannot watch; and the dashboard's
//! assets are served compressed with a validator, so a reload costs a 304.

use std::time::Duration;

use serde_json::json;
use tasker::TestEnv;
use tasker_client::CreateTask;
use uuid::Uuid;

use super::clean_tour;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_task_tabs_share_one_connection_and_all_stay_live() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    // One wait step: each task ends when its signal comes, however long the tabs take to open.
    let template = "namespace: rust_examples\nname: tabs_wait\nversion: 1.0.0\nsteps:\n  \
                    - name: approval\n    wait: {signal: approved, timeout: 1h}\n";
    o.client.register_template(template, None, None).await?;
    let mut ids = Vec::new();
    for _ in 0..10 {
        let task = o
            .client
            .create_task(&CreateTask::new("rust_examples", "tabs_wait").context(json!({})))
            .await?;
        ids.push(task.id.to_string());
    }
    let report = clean_tour(
        "tabs.mjs",
        &[
            ("TASKER_URL", o.url()),
            ("TASK_IDS", ids.join(",")),
            ("SIGNAL", "approved".into()),
        ],
    )
    .await?;
    assert_eq!(report["complete"], 10, "{report}");
    assert_eq!(
        report["tabsStreaming"], 1,
        "one tab streams for all: {report}"
    );
    for id in &ids {
        assert_eq!(o.client.task(id.parse()?, None).await?.state, "complete");
    }
    o.stop().await;
    env.cleanup().await
}

/// The events of a stream as text, until `until` is in it (or 10 s pass).
async fn read_stream(url: &str, until: &str) -> anyhow::Result<(u16, String)> {
    let mut resp = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    let status = resp.status().as_u16();
    let mut text = String::new();
    if status != 200 {
        return Ok((status, resp.text().await?));
    }
    tokio::time::timeout(Duration::from_secs(10), async {
        while !text.contains(until) {
            match resp.chunk().await? {
                Some(chunk) => text.push_str(&String::from_utf8_lossy(&chunk)),
                None => break,
            }
        }
        anyhow::Ok(())
    })
    .await??;
    Ok((status, text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_stream_watches_several_tasks_and_names_those_it_cannot() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let mut made = Vec::new();
    for value in [1, 2] {
        let task = CreateTask::new("rust_examples", "linear").context(json!({ "value": value }));
        made.push(o.client.create_task(&task).await?);
    }
    let (a, b) = (&made[0], &made[1]);
    let gone = Uuid::now_v7();
    let url = format!("{}/v1/events?tasks={},{gone},{}", o.url(), a.id, b.id);
    let (status, text) = read_stream(&url, &b.id.to_string()).await?;
    assert_eq!(status, 200, "{text}");
    let text = if text.contains(&format!("\"id\":\"{}\"", a.id)) {
        text
    } else {
        read_stream(&url, &format!("\"id\":\"{}\"", a.id)).await?.1
    };
    assert!(text.contains("event: missing"), "{text}");
    assert!(text.contains(&format!("\"task_id\":\"{gone}\"")), "{text}");
    assert!(text.contains("task_not_found"), "{text}");
    assert!(text.matches("event: snapshot").count() >= 1, "{text}");
    // Bad queries are refused whole.
    for bad in ["tasks=", "tasks=nope", "other=1"] {
        let (status, body) = read_stream(&format!("{}/v1/events?{bad}", o.url()), "").await?;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_are_compressed_and_revalidated_with_an_etag() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    let http = reqwest::Client::new();
    let url = format!("{}/ui/app.js", o.url());
    let plain = http.get(&url).send().await?;
    assert_eq!(plain.status().as_u16(), 200);
    let etag = plain.headers()["etag"].to_str()?.to_owned();
    assert!(plain.headers().get("content-encoding").is_none());
    let plain_len = plain.bytes().await?.len();
    let zipped = http
        .get(&url)
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await?;
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    assert_eq!(zipped.headers()["etag"].to_str()?, etag);
    let body = zipped.bytes().await?;
    let mut unzipped = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&body[..]), &mut unzipped)?;
    assert_eq!(unzipped.len(), plain_len);
    assert!(body.len() * 3 < plain_len, "{} of {plain_len}", body.len());
    let again = http.get(&url).header("if-none-match", &etag).send().await?;
    assert_eq!(again.status().as_u16(), 304);
    assert!(again.bytes().await?.is_empty());
    let other = http
        .get(&url)
        .header("if-none-match", "\"older\"")
        .send()
        .await?;
    assert_eq!(other.status().as_u16(), 200);
    o.stop().await;
    env.cleanup().await
}
