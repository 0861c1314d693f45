//! Each language's client sends an event (`conformance-client URL event …`, twice with one
//! sender's id) that starts a task in its worker's namespace through a template's trigger; the
//! worker runs it, and the repeat answers the same event and starts nothing.

use std::time::Duration;

use serde_json::{Value, json};
use tasker::TestEnv;

use crate::common::start_worker;
use crate::conformance_client;

/// `linear`'s four steps in `namespace`, started by `conformance.ping` with the event's data
/// as its context.
fn on_ping(namespace: &str) -> String {
    format!(
        "namespace: {namespace}\nname: on_ping\nversion: 1.0.0\n\
         on:\n  - event: conformance.ping\n\
         steps:\n  - name: double\n    handler: double\n\
         \x20 - name: add_ten\n    handler: add_ten\n    depends_on: [double]\n\
         \x20 - name: square\n    handler: square\n    depends_on: [add_ten]\n\
         \x20 - name: halve\n    handler: halve\n    depends_on: [square]\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_sends_an_event_that_starts_a_task_in_its_worker() -> anyhow::Result<()> {
    let mut env = TestEnv::new().await?;
    env.config.orchestrator.templates = Vec::new();
    let o = env.orchestrator().await?;
    for language in ["python", "ruby", "typescript"] {
        let mut worker =
            start_worker(&env, language, &format!("{language}-events"), &o.url()).await?;
        let namespace = format!("{language}_examples");
        o.client
            .register_template(&on_ping(&namespace), None, None)
            .await?;
        let args = [
            o.url(),
            "event".into(),
            namespace.clone(),
            "conformance.ping".into(),
            r#"{"value": 6}"#.into(),
            format!("ping-{language}"),
        ];
        let stdout = conformance_client(language, &args).await?;
        let lines: Vec<(&str, Value)> = stdout
            .lines()
            .map(|l| {
                let (label, json) = l.split_once(' ').unwrap_or((l, "null"));
                Ok((label, serde_json::from_str(json)?))
            })
            .collect::<anyhow::Result<_>>()?;
        assert_eq!(lines.len(), 2, "{language}: {stdout}");
        let (sent, again) = (&lines[0], &lines[1]);
        assert_eq!((sent.0, again.0), ("sent", "again"), "{language}");
        assert_eq!(
            sent.1, again.1,
            "{language}: a repeat answers the same event"
        );
        let started = &sent.1["started"];
        assert_eq!(
            started[0]["template"],
            json!(format!("{namespace}/on_ping@1.0.0")),
            "{language}: {stdout}"
        );
        let task_id: uuid::Uuid = started[0]["task_id"].as_str().unwrap_or_default().parse()?;
        let task = o
            .client
            .task(task_id, Some(Duration::from_secs(60)))
            .await?;
        assert_eq!(task.state, "complete", "{language}: {task:?}");
        assert_eq!(task.context, json!({ "value": 6 }), "{language}");
        assert_eq!(
            task.result,
            Some(json!({ "halve": { "value": 242 } })),
            "{language}: its worker ran it"
        );
        worker.child.kill().await?;
    }
    o.stop().await;
    env.cleanup().await
}
