//! Alerts out, against a real orchestrator and PostgreSQL and a sink listening on a port of its
//! own: a template failing 5 times within its window sends one signed notice, nothing more while
//! it fires, a resolved notice when the window clears, and nothing when it fires again within
//! the suppression window; a sink that refuses is tried again until it takes the notice; a
//! Slack sink gets `{"text"}`; an email sink's notice reaches an SMTP server; bad rules are
//! refused by name. Tasks here fail by their deadline (their one step no worker serves), so no
//! worker is needed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use tasker::RunningOrchestrator;
use tasker_client::{Alert, AlertCondition, AlertKind, AlertSink, CreateTask, PutAlert};
use tasker_orchestration::webhook_sign::verify;
use tasker_shared::api::WebhookFormat;

use super::bare_env;

/// The window of the first test's rule: its failures all fall in it, and it clears in a while.
const WINDOW: &str = "10s";

/// A template of `shop_al` that fails 1 s after it starts (no worker serves its step).
const FAILING: &str = "namespace: shop_al
name: charge
version: '1'
deadline: {within: 1s}
steps:
  - name: stuck
    handler: nobody_serves_this
";

/// A sink: what it received, in order; it answers 503 to the first `refuse` requests, then 200.
/// Each request's answer is settled before it is reported, so a test reading one cannot race it.
pub(super) struct Sink {
    pub(super) url: String,
    received: mpsc::UnboundedReceiver<(HeaderMap, Bytes)>,
    refuse: Arc<AtomicU32>,
}

pub(super) async fn sink() -> anyhow::Result<Sink> {
    let (tx, received) = mpsc::unbounded_channel();
    let refuse = Arc::new(AtomicU32::new(0));
    let left = refuse.clone();
    // A stand-in for another service's endpoint, not an API of Tasker's: nothing to document.
    #[allow(clippy::disallowed_methods)]
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (tx, left) = (tx.clone(), left.clone());
            async move {
                let refused = left
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                let _ = tx.send((headers, body));
                if refused {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::OK
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(Sink {
        url,
        received,
        refuse,
    })
}

impl Sink {
    /// The next request, within `secs`.
    pub(super) async fn next(&mut self, secs: u64) -> anyhow::Result<(HeaderMap, Bytes)> {
        tokio::time::timeout(Duration::from_secs(secs), self.received.recv())
            .await
            .map_err(|_| anyhow::anyhow!("no notice within {secs} s"))?
            .ok_or_else(|| anyhow::anyhow!("the sink stopped"))
    }
}

fn rule(url: &str, within: &str, suppress: &str) -> PutAlert {
    PutAlert {
        namespace: "shop_al".into(),
        when: AlertCondition {
            kind: AlertKind::Failures,
            template: Some("charge".into()),
            schedule: None,
            count: Some(5),
            within: Some(within.into()),
            longer_than: None,
        },
        sink: AlertSink::Webhook { url: url.into() },
        secret: None,
        suppress: Some(suppress.into()),
    }
}

/// Starts `n` failing tasks and waits until every one has failed.
async fn fail(o: &RunningOrchestrator, n: usize) -> anyhow::Result<()> {
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(
            o.client
                .create_task(&CreateTask::new("shop_al", "charge"))
                .await?
                .id,
        );
    }
    for id in ids {
        assert_eq!(o.wait(id).await?.state, "error");
    }
    Ok(())
}

/// The rule once a check after `since` has seen what it counts.
async fn checked_after(
    o: &RunningOrchestrator,
    name: &str,
    since: chrono::DateTime<chrono::Utc>,
    done: impl Fn(&Alert) -> bool,
) -> anyhow::Result<Alert> {
    o.until(Duration::from_secs(10), "the rule checked", || async {
        let a = o.client.alert(name).await?;
        Ok(a.checked_at
            .filter(|at| *at > since)
            .and_then(|_| done(&a).then_some(a.clone())))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_failures_send_one_signed_notice_then_its_resolution_and_a_repeat_is_held_back()
-> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client.register_template(FAILING, None, None).await?;
    let mut sink = sink().await?;
    let (saved, created) = o
        .client
        .put_alert("charges", &rule(&sink.url, WINDOW, "1h"))
        .await?;
    assert!(created);
    let secret = saved
        .secret
        .clone()
        .expect("a webhook sink's secret, shown once");
    assert_eq!(
        o.client.alert("charges").await?.secret,
        None,
        "shown only once"
    );

    fail(&o, 5).await?;
    let failed_at = Instant::now();
    let (headers, body) = sink.next(10).await?;
    println!(
        "the firing notice came {:?} after the fifth failure",
        failed_at.elapsed()
    );
    let now = chrono::Utc::now().timestamp();
    verify(WebhookFormat::Generic, &secret, &headers, &body, now, 60)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let notice: Value = serde_json::from_slice(&body)?;
    assert_eq!(
        (&notice["alert"], &notice["state"], &notice["threshold"]),
        (&json!("charges"), &json!("firing"), &json!(5)),
        "{notice}"
    );
    assert!(notice["observed"].as_i64() >= Some(5), "{notice}");
    assert!(
        notice["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("FIRING")
    );

    // While it fires, more failures tell nothing new (the window is long enough that a loaded
    // machine's sixth failure still falls in it with the first five).
    fail(&o, 1).await?;
    let failed = chrono::Utc::now();
    let firing = checked_after(&o, "charges", failed, |a| a.state == "firing").await?;
    assert_eq!((firing.observed, firing.sent), (Some(6), 1), "{firing:?}");
    assert!(
        sink.received.try_recv().is_err(),
        "a second notice while firing"
    );

    // The window clears: one resolved notice.
    let (_, body) = sink.next(25).await?;
    let notice: Value = serde_json::from_slice(&body)?;
    assert_eq!(notice["state"], "resolved", "{notice}");
    let resolved = o.client.alert("charges").await?;
    assert_eq!(resolved.state, "ok");
    assert!(resolved.resolved_at.is_some());

    // It fires again within the suppression window: held back, nothing sent.
    let before = chrono::Utc::now();
    fail(&o, 5).await?;
    let again = checked_after(&o, "charges", before, |a| a.state == "firing").await?;
    assert_eq!((again.suppressed, again.sent), (1, 2), "{again:?}");
    assert!(
        sink.received.try_recv().is_err(),
        "a suppressed firing was sent"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_sink_is_tried_again_and_a_slack_sink_gets_text() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    o.client.register_template(FAILING, None, None).await?;
    let mut hook = sink().await?;
    hook.refuse.store(1, Ordering::SeqCst);
    let mut slack = sink().await?;
    o.client
        .put_alert("down", &rule(&hook.url, "1m", "1h"))
        .await?;
    let mut to_slack = rule(&slack.url, "1m", "1h");
    to_slack.sink = AlertSink::Slack {
        url: slack.url.clone(),
    };
    o.client.put_alert("chat", &to_slack).await?;
    fail(&o, 5).await?;

    let (_, body) = slack.next(10).await?;
    let text: Value = serde_json::from_slice(&body)?;
    assert!(
        text["text"]
            .as_str()
            .unwrap_or_default()
            .contains("chat FIRING"),
        "{text}"
    );
    // Refused, then tried again a second later; it takes the second try.
    let (_, first) = hook.next(10).await?;
    let tried = Instant::now();
    let (_, second) = hook.next(10).await?;
    println!("tried again {:?} after a refusal", tried.elapsed());
    assert_eq!(first, second, "the same notice");
    let down = o
        .until(Duration::from_secs(10), "the delivery recorded", || async {
            let a = o.client.alert("down").await?;
            Ok((a.sent == 1).then_some(a))
        })
        .await?;
    assert_eq!(
        (down.failed, down.last_error.as_deref()),
        (0, None),
        "{down:?}"
    );
    o.stop().await;
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rules_are_refused_by_name_and_change_nothing() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    let good = rule("http://127.0.0.1:9/hook", "1m", "1h");
    let mut cases: Vec<(&str, PutAlert)> = Vec::new();
    let mut c = good.clone();
    c.sink = AlertSink::Webhook {
        url: "ftp://example.com/x".into(),
    };
    cases.push(("sink.url", c));
    let mut c = good.clone();
    c.when.count = Some(0);
    cases.push(("when.count", c));
    let mut c = good.clone();
    c.when.within = Some("2d".into());
    cases.push(("when.within", c));
    let mut c = good.clone();
    c.when.longer_than = Some("1m".into());
    cases.push(("when.longer_than", c));
    let mut c = good.clone();
    c.secret = Some("short".into());
    cases.push(("secret", c));
    let mut c = good.clone();
    c.suppress = Some("2d".into());
    cases.push(("suppress", c));
    let http = reqwest::Client::new();
    for (field, spec) in cases {
        let resp = http
            .put(format!("{}/v1/alerts/bad", o.url()))
            .json(&spec)
            .send()
            .await?;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await?;
        assert_eq!(
            (
                status,
                &body["error"]["code"],
                &body["error"]["details"]["field"]
            ),
            (400, &json!("invalid_alert"), &json!(field)),
            "{body}"
        );
    }
    assert!(o.client.alerts().await?.is_empty());
    match o.client.alert("bad").await {
        Err(tasker_client::Error::Api {
            status: 404, code, ..
        }) => {
            assert_eq!(code, "alert_not_found")
        }
        other => panic!("expected 404, got {other:?}"),
    }
    o.stop().await;
    env.cleanup().await
}

/// An SMTP server that takes every message (a local sink, as a relay would be): each message's
/// text, in order.
async fn smtp_sink() -> anyhow::Result<(u16, mpsc::UnboundedReceiver<String>)> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                let _ = write.write_all(b"220 sink ESMTP\r\n").await;
                let mut data: Option<String> = None;
                while let Ok(Some(line)) = lines.next_line().await {
                    let answer: &[u8] = match &mut data {
                        Some(text) if line == "." => {
                            let _ = tx.send(std::mem::take(text));
                            data = None;
                            b"250 queued\r\n"
                        }
                        Some(text) => {
                            text.push_str(&line);
                            text.push('\n');
                            continue;
                        }
                        None => match line.get(..4).map(str::to_ascii_uppercase).as_deref() {
                            Some("DATA") => {
                                data = Some(String::new());
                                b"354 go on\r\n"
                            }
                            Some("QUIT") => {
                                let _ = write.write_all(b"221 bye\r\n").await;
                                return;
                            }
                            _ => b"250 ok\r\n",
                        },
                    };
                    if write.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((port, rx))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_sink_sends_the_notice_through_the_smtp_server() -> anyhow::Result<()> {
    let (port, mut mails) = smtp_sink().await?;
    let mut env = bare_env().await?;
    env.config.alerts.smtp_url = Some(format!("smtp://127.0.0.1:{port}"));
    env.config.alerts.smtp_from = "tasker@example.com".into();
    let o = env.orchestrator().await?;
    o.client.register_template(FAILING, None, None).await?;
    let mut by_mail = rule("http://unused.example", "1m", "1h");
    by_mail.when.count = Some(1);
    by_mail.sink = AlertSink::Email {
        to: vec!["ops@example.com".into(), "oncall@example.com".into()],
    };
    o.client.put_alert("mailed", &by_mail).await?;
    fail(&o, 1).await?;
    let mail = tokio::time::timeout(Duration::from_secs(10), mails.recv())
        .await
        .map_err(|_| anyhow::anyhow!("no email within 10 s"))?
        .ok_or_else(|| anyhow::anyhow!("the sink stopped"))?;
    for part in [
        "From: tasker@example.com",
        "ops@example.com",
        "oncall@example.com",
        "Subject: [shop_al] mailed FIRING",
        "\"alert\": \"mailed\"",
    ] {
        assert!(mail.contains(part), "{part:?} in {mail}");
    }
    let sent = o
        .until(Duration::from_secs(10), "the delivery recorded", || async {
            let a = o.client.alert("mailed").await?;
            Ok((a.sent == 1).then_some(a))
        })
        .await?;
    assert_eq!(sent.sink.target(), "ops@example.com, oncall@example.com");

    // Without an SMTP server configured, an email sink is refused by name.
    let bare = bare_env().await?;
    let plain = bare.orchestrator().await?;
    let resp = reqwest::Client::new()
        .put(format!("{}/v1/alerts/mailed", plain.url()))
        .json(&by_mail)
        .send()
        .await?;
    let body: Value = resp.json().await?;
    assert_eq!(body["error"]["details"]["field"], "sink.kind", "{body}");
    plain.stop().await;
    bare.cleanup().await?;
    o.stop().await;
    env.cleanup().await
}
