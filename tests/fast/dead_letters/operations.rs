//! Dead letters by filter: replay every dead letter a filter matches (each goes back to its
//! queue and is applied; one that may never be replayed is left and counted), discard the rest,
//! with a dry run's count first — through the API and `tasker bulk`; a filter of the wrong kind
//! is refused.

use std::time::Duration;

use serde_json::{Value, json};
use tasker::letters::{park, result_of};
use tasker::{RunningOrchestrator, TestEnv, steps_by_name, workspace_binary};
use tasker_client::{CreateTask, Operation, OperationFilter, StartOperation};

use super::WAIT;

fn request(action: &str, filter: OperationFilter, dry_run: bool) -> StartOperation {
    StartOperation {
        action: action.into(),
        filter,
        reason: Some("incident 12".into()),
        by: Some("user:oncall".into()),
        result: None,
        dry_run,
    }
}

/// Operation `op` once it has ended.
async fn ended(o: &RunningOrchestrator, op: &Operation) -> anyhow::Result<Operation> {
    Ok(o.client
        .wait_operation(op.id, Duration::from_secs(30), |_| {})
        .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_replayed_and_discarded_by_filter() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    // No worker: each task's root step waits, and its parked result is what completes it.
    let mut kept = o.dead_letters_kept();
    let mut tasks = Vec::new();
    for value in 1..=3 {
        let task = o
            .client
            .create_task(
                &CreateTask::new("rust_examples", "linear").context(json!({ "value": value })),
            )
            .await?;
        let root = steps_by_name(&o.client, task.id).await?["double"].clone();
        let body = result_of(task.id, root.id, json!({"value": 100 + value}));
        park(&env.config, &body, "parked: upstream was down", None).await?;
        tasks.push(task.id);
    }
    // Two from nowhere this cluster knows: they may never be replayed.
    for n in 0..2 {
        let body = format!("junk {n}");
        park(
            &env.config,
            body.as_bytes(),
            "junk: unreadable",
            Some("elsewhere"),
        )
        .await?;
    }
    kept.take(5, WAIT).await?;

    let parked = OperationFilter {
        reason: Some("parked".into()),
        ..OperationFilter::default()
    };
    let count = o
        .client
        .count_operation(&request("replay", parked.clone(), true))
        .await?;
    assert_eq!(
        (count.matched, count.dead_letter_sample.len()),
        (3, 3),
        "{count:?}"
    );
    assert!(count.sample.is_empty());
    let op = o
        .client
        .start_operation(&request("replay", parked, false))
        .await?;
    let op = ended(&o, &op).await?;
    assert_eq!(
        (op.state.as_str(), op.matched, op.acted, op.skipped),
        ("complete", 3, 3, 0),
        "{op:?}"
    );
    // Each replayed result was applied: the root steps completed with the parked values.
    for (i, id) in tasks.iter().enumerate() {
        let double = o
            .until(WAIT, "the replayed result applied", || async {
                let s = steps_by_name(&o.client, *id).await?["double"].clone();
                anyhow::Ok(Some(s).filter(|s| s.state == "completed"))
            })
            .await?;
        assert_eq!(double.result, Some(json!({"value": 101 + i as i64})));
    }

    // The junk: a replay leaves them (not replayable), counted skipped; a discard removes them.
    let junk = OperationFilter {
        reason: Some("junk".into()),
        ..OperationFilter::default()
    };
    let op = o
        .client
        .start_operation(&request("replay", junk.clone(), false))
        .await?;
    let op = ended(&o, &op).await?;
    assert_eq!((op.acted, op.skipped), (0, 2), "{op:?}");
    assert_eq!(
        o.client.dead_letters(None, None).await?.dead_letters.len(),
        2
    );
    // `tasker bulk discard`, a dry run first.
    let tasker = |args: &[&str]| {
        std::process::Command::new(workspace_binary("tasker").expect("the CLI"))
            .args([
                "--url",
                &o.url(),
                "bulk",
                "discard",
                "--reason-prefix",
                "junk",
            ])
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
    };
    let dry = tasker(&["--dry-run"])?;
    let said = String::from_utf8(dry.stdout)?;
    assert!(said.starts_with("would discard 2 dead letters"), "{said}");
    let done = tasker(&["--reason", "noise", "--json"])?;
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let op: Value = serde_json::from_slice(&done.stdout)?;
    assert_eq!(
        (&op["state"], &op["acted"], &op["skipped"]),
        (&json!("complete"), &json!(2), &json!(0)),
        "{op}"
    );
    assert!(
        o.client
            .dead_letters(None, None)
            .await?
            .dead_letters
            .is_empty()
    );

    // A filter of the other kind is refused whole.
    for (action, filter) in [
        ("replay", json!({"name": "linear"})),
        ("retry", json!({"queue": "x"})),
        ("discard", json!({"ids": [uuid::Uuid::now_v7()]})),
    ] {
        let resp = reqwest::Client::new()
            .post(format!("{}/v1/operations", o.url()))
            .json(&json!({"action": action, "filter": filter}))
            .send()
            .await?;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await?;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_filter")),
            "{action} {filter}: {body}"
        );
    }
    o.stop().await;
    env.cleanup().await
}
