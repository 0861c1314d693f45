use super::*;
use crate::handler::HandlerError;
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/task_templates/rust")
        .join(name)
}

async fn route(ctx: StepContext) -> Result<Value, HandlerError> {
    let value = ctx.parent_results.all().await?["check"]
        .as_i64()
        .unwrap_or_default();
    Ok(json!({"branches": [if value < 100 { "small" } else { "huge" }]}))
}

async fn flaky(ctx: StepContext) -> Result<Value, HandlerError> {
    Err(HandlerError::retryable(
        "Flaky",
        format!("attempt {}", ctx.attempt),
    ))
}

async fn slow(_: StepContext) -> Result<Value, HandlerError> {
    std::future::pending().await
}

async fn boom(_: StepContext) -> Result<Value, HandlerError> {
    panic!("kaboom")
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register("route_by_size", route)
        .register("flaky", flaky)
        .register("slow", slow)
        .register("boom", boom);
    r
}

#[tokio::test]
async fn a_decision_from_its_template_is_judged_by_the_engines_rule() {
    let step = TestStep::from_template(fixture("conditional.yaml"), "route").unwrap();
    let small = step
        .clone()
        .parent("check", json!(7))
        .run(&registry())
        .await
        .unwrap();
    assert_eq!(small.result(), Some(&json!({"branches": ["small"]})));
    match &small {
        TestOutcome::Success { branches, .. } => {
            assert_eq!(branches.as_deref(), Some(&["small".to_owned()][..]))
        }
        other => panic!("{other:?}"),
    }
    // A branch the template does not declare fails the step for good, as in the engine.
    let huge = step
        .parent("check", json!(700))
        .run(&registry())
        .await
        .unwrap();
    let TestOutcome::Failure {
        retryable,
        retried,
        error,
        ..
    } = huge
    else {
        panic!("{huge:?}")
    };
    assert_eq!(
        (retryable, retried, error.kind.as_str()),
        (false, false, "invalid_decision")
    );
}

#[tokio::test]
async fn a_retryable_failure_is_retried_until_the_last_attempt() {
    let step = TestStep::new("flaky").max_attempts(3);
    let first = step.clone().attempt(1).run(&registry()).await.unwrap();
    assert_eq!(
        first,
        TestOutcome::Failure {
            retryable: true,
            retried: true,
            error: StepError::new("Flaky", "attempt 1"),
            retry_in: Some(0.1),
        }
    );
    let last = step.attempt(3).run(&registry()).await.unwrap();
    assert!(
        matches!(
            last,
            TestOutcome::Failure {
                retryable: true,
                retried: false,
                retry_in: None,
                ..
            }
        ),
        "{last:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_a_panic_and_an_unknown_handler_fail_as_under_a_worker() {
    let timed_out = TestStep::new("slow")
        .timeout(Duration::from_secs(2))
        .run(&registry())
        .await
        .unwrap();
    assert_eq!(timed_out.error().map(|e| e.kind.as_str()), Some("timeout"));
    let panicked = TestStep::new("boom").run(&registry()).await.unwrap();
    assert_eq!(panicked.error().map(|e| e.kind.as_str()), Some("panic"));
    let unknown = TestStep::new("nobody").run(&registry()).await.unwrap();
    assert!(
        matches!(
            unknown,
            TestOutcome::Failure {
                retryable: false,
                ..
            }
        ),
        "{unknown:?}"
    );
}

#[test]
fn a_result_too_large_or_a_bad_step_is_refused_with_the_reason() {
    let step = TestStep {
        max_result_bytes: 16,
        ..TestStep::new("h")
    };
    let judged = step.judge(Outcome::Success {
        result: json!({"text": "x".repeat(64)}),
    });
    assert_eq!(
        judged.error().map(|e| e.kind.as_str()),
        Some("result_too_large")
    );
    let wait = TestStep::from_template(fixture("signal_wait.yaml"), "approval").unwrap_err();
    assert!(wait.to_string().contains("no handler to test"), "{wait}");
    let missing = TestStep::from_template(fixture("conditional.yaml"), "nope").unwrap_err();
    assert!(
        missing.to_string().contains("its steps: check, route"),
        "{missing}"
    );
    let zero = TestStep::new("h").attempt(0).resolved().unwrap_err();
    assert!(zero.to_string().contains("attempt 0"), "{zero}");
}

#[test]
fn bindings_get_the_job_and_the_judgement_as_json() {
    let spec = json!({"handler": "csv_split", "step_type": "batchable", "context": {"rows": 3}})
        .to_string();
    let job: Value = serde_json::from_str(&test_job(&spec).unwrap()).unwrap();
    assert_eq!(
        (
            job["id"].clone(),
            job["handler"].clone(),
            job["context"].clone()
        ),
        (json!(1), json!("csv_split"), json!({"rows": 3}))
    );
    let judged = test_judge(
        &spec,
        r#"{"id": 1, "status": "success", "result": {"batches": [1, 2]}}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&judged).unwrap(),
        json!({"status": "success", "result": {"batches": [1, 2]}, "batches": [1, 2]})
    );
    assert!(
        test_judge(&spec, "{}")
            .unwrap_err()
            .to_string()
            .contains("not the protocol's")
    );
    assert!(
        test_job(r#"{"handler": "h", "colour": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("colour")
    );
}

#[test]
fn the_docs_rust_example_is_this_modules_doctest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("../docs/testing.md")).unwrap();
    let start = docs
        .find("```rust\n")
        .expect("docs/testing.md has a rust block");
    let end = start + docs[start..].find("\n```\n").unwrap() + 5;
    let source = std::fs::read_to_string(root.join("src/testing.rs")).unwrap();
    let doc: Vec<&str> = source
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    assert!(
        doc.join("\n").contains(docs[start..end].trim_end()),
        "docs/testing.md's rust example differs from tasker_worker::testing's doctest"
    );
}
