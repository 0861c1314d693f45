//! The handlers, registered by name in [`registry`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tasker_worker::{Handler, HandlerError, HandlerFuture, Registry, StepContext};

mod batches;
mod csv;
mod pipeline;
mod range;
mod streams;

/// Every handler the Rust fixture templates use.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register("double", |ctx| arith(ctx, |n| n.checked_mul(2)))
        .register("add_ten", |ctx| arith(ctx, |n| n.checked_add(10)))
        .register("square", |ctx| arith(ctx, |n| n.checked_mul(n)))
        .register("halve", |ctx| arith(ctx, |n| Some(n / 2)))
        .register("sum_parents", |ctx| arith(ctx, Some))
        .register("route_by_size", route_by_size)
        .register("flaky", flaky)
        .register("echo_attempts", echo_attempts)
        .register("fail_permanently", fail_permanently)
        .register("rate_limited", rate_limited)
        .register("introspect", introspect)
        .register("pulse", pulse)
        .register("signal_wait_finish", signal_wait_finish)
        .register("instance_id", InstanceId::new())
        .register("same_instance", same_instance)
        .register("sleep", sleep)
        .register("metered", metered)
        .register("panic", panic)
        .register("csv_split", csv::split)
        .register("csv_process_batch", csv::process_batch)
        .register("csv_aggregate", csv::aggregate)
        .register("range_split", range::split)
        .register("range_sum", range::sum)
        .register("sum_batches", range::total)
        .register("pipeline_parse", pipeline::parse)
        .register("relay", pipeline::relay)
        .register("stream_emitter", streams::stream_emitter);
    r
}

/// The step's input: `context.value` for a root step, else the sum of the parents' values.
async fn input(ctx: &StepContext) -> Result<i64, HandlerError> {
    let parents = ctx.parent_results.all().await?;
    if parents.is_empty() {
        return ctx
            .context
            .get("value")
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                HandlerError::permanent("invalid_input", "context.value must be an integer")
            });
    }
    parents.iter().try_fold(0i64, |sum, (name, r)| {
        let v = r.get("value").and_then(Value::as_i64).ok_or_else(|| {
            HandlerError::permanent(
                "invalid_input",
                format!("parent `{name}` has no integer `value`"),
            )
        })?;
        sum.checked_add(v)
            .ok_or_else(|| HandlerError::permanent("overflow", "sum overflows"))
    })
}

async fn arith(ctx: StepContext, f: impl Fn(i64) -> Option<i64>) -> Result<Value, HandlerError> {
    let n = input(&ctx).await?;
    let v = f(n).ok_or_else(|| HandlerError::permanent("overflow", format!("{n} overflows")))?;
    Ok(json!({ "value": v }))
}

/// Decision: values of 50 or more take the `large` branch, smaller ones `small`.
async fn route_by_size(ctx: StepContext) -> Result<Value, HandlerError> {
    let n = input(&ctx).await?;
    let branch = if n >= 50 { "large" } else { "small" };
    Ok(json!({ "branches": [branch], "value": n }))
}

/// Fails retryably until attempt `context.succeed_on_attempt` (default 3).
async fn flaky(ctx: StepContext) -> Result<Value, HandlerError> {
    let succeed_on = ctx
        .context
        .get("succeed_on_attempt")
        .and_then(Value::as_u64)
        .unwrap_or(3);
    if u64::from(ctx.attempt) < succeed_on {
        return Err(HandlerError::retryable(
            "transient",
            format!("attempt {} fails, {succeed_on} succeeds", ctx.attempt),
        ));
    }
    Ok(json!({ "attempts": ctx.attempt }))
}

async fn echo_attempts(ctx: StepContext) -> Result<Value, HandlerError> {
    Ok(json!({ "attempt": ctx.attempt, "parents": ctx.parent_results.all().await? }))
}

async fn fail_permanently(_ctx: StepContext) -> Result<Value, HandlerError> {
    Err(HandlerError::permanent(
        "validation",
        "input rejected for good",
    ))
}

/// Its first attempt asks to be retried after 200 ms (the template's backoff is an hour).
async fn rate_limited(ctx: StepContext) -> Result<Value, HandlerError> {
    if ctx.attempt == 1 {
        return Err(HandlerError::retryable("rate_limited", "slow down")
            .retry_after(Duration::from_millis(200)));
    }
    Ok(json!({ "attempts": ctx.attempt }))
}

/// The step after `signal_wait`'s `approval` wait: the context's value doubled, and who
/// approved (the signal's payload is the wait step's result).
async fn signal_wait_finish(ctx: StepContext) -> Result<Value, HandlerError> {
    let n = ctx
        .context
        .get("value")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            HandlerError::permanent("invalid_input", "context.value must be an integer")
        })?;
    let value = n
        .checked_mul(2)
        .ok_or_else(|| HandlerError::permanent("overflow", format!("{n} overflows")))?;
    let parents = ctx.parent_results.all().await?;
    let approved_by = parents
        .get("approval")
        .and_then(|a| a.get("approved_by"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(json!({ "value": value, "approved_by": approved_by }))
}

/// Whether the running step is still the worker's, as every language's `heartbeat` says.
async fn pulse(ctx: StepContext) -> Result<Value, HandlerError> {
    Ok(json!({ "heartbeat": ctx.heartbeat() }))
}

/// What the handler sees of its step, in a form every language gives alike.
async fn introspect(ctx: StepContext) -> Result<Value, HandlerError> {
    Ok(json!({
        "task_name": ctx.task_name,
        "step_name": ctx.step_name,
        "handler": ctx.handler,
        "attempt": ctx.attempt,
        "max_attempts": ctx.max_attempts,
        "timeout_ms": u64::try_from(ctx.timeout.as_millis()).unwrap_or(u64::MAX),
        "context": ctx.context,
        "parents": ctx.parent_results.all().await?,
        "input": ctx.input,
        "ids": ctx.task_id != ctx.step_id,
    }))
}

/// Returns the id of the handler value that ran the step: one value per worker runs every step
/// of its name (the registry keeps it, shared).
struct InstanceId(u64);

impl InstanceId {
    fn new() -> Self {
        static MADE: AtomicU64 = AtomicU64::new(0);
        Self(MADE.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

impl Handler for InstanceId {
    fn call(&self, _ctx: StepContext) -> HandlerFuture {
        let id = self.0;
        Box::pin(async move { Ok(json!({ "instance": id })) })
    }
}

async fn same_instance(ctx: StepContext) -> Result<Value, HandlerError> {
    let parents = ctx.parent_results.all().await?;
    let ids: std::collections::BTreeSet<String> = parents
        .values()
        .map(|r| r["instance"].to_string())
        .collect();
    Ok(json!({ "one_instance": ids.len() == 1 }))
}

/// Sleeps `context.sleep_ms` (default 100) milliseconds: a stand-in for slow work.
async fn sleep(ctx: StepContext) -> Result<Value, HandlerError> {
    let ms = ctx
        .context
        .get("sleep_ms")
        .and_then(Value::as_u64)
        .unwrap_or(100);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(json!({ "slept_ms": ms }))
}

/// Counts the steps of `context.customer` running at once in this worker: returns how many
/// ran (itself included) when it started, after sleeping `context.sleep_ms` (default 20). A
/// concurrency limit's test reads it.
async fn metered(ctx: StepContext) -> Result<Value, HandlerError> {
    static RUNNING: std::sync::Mutex<Option<HashMap<String, usize>>> = std::sync::Mutex::new(None);
    fn running() -> std::sync::MutexGuard<'static, Option<HashMap<String, usize>>> {
        RUNNING.lock().unwrap_or_else(|p| p.into_inner())
    }
    let key = ctx.context["customer"].to_string();
    let seen = {
        let mut r = running();
        let n = r
            .get_or_insert_with(HashMap::new)
            .entry(key.clone())
            .or_default();
        *n += 1;
        *n
    };
    let ms = ctx.context["sleep_ms"].as_u64().unwrap_or(20);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    if let Some(n) = running().as_mut().and_then(|r| r.get_mut(&key)) {
        *n -= 1;
    }
    Ok(json!({ "running": seen }))
}

async fn panic(_ctx: StepContext) -> Result<Value, HandlerError> {
    panic!("this handler always panics")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use uuid::Uuid;

    fn ctx(context: Value, parents: &[(&str, Value)], attempt: u32) -> StepContext {
        StepContext {
            task_id: Uuid::nil(),
            step_id: Uuid::nil(),
            namespace: "rust_examples".into(),
            task_name: "t".into(),
            step_name: "s".into(),
            handler: "h".into(),
            attempt,
            max_attempts: 3,
            context,
            parent_results: parents
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect::<Map<_, _>>()
                .into(),
            input: None,
            timeout: Duration::from_secs(30),
            started: std::time::Instant::now(),
            stream: None,
        }
    }

    async fn call(name: &str, c: StepContext) -> Result<Value, HandlerError> {
        registry().get(name).expect(name).call(c).await
    }

    #[tokio::test]
    async fn root_reads_context_and_children_sum_parents() {
        let v = call("double", ctx(json!({"value": 6}), &[], 1))
            .await
            .unwrap();
        assert_eq!(v, json!({"value": 12}));
        let parents = [("a", json!({"value": 36})), ("b", json!({"value": 16}))];
        let v = call("sum_parents", ctx(json!({}), &parents, 1))
            .await
            .unwrap();
        assert_eq!(v, json!({"value": 52}));
    }

    #[tokio::test]
    async fn bad_input_and_overflow_are_permanent() {
        let e = call("double", ctx(json!({"value": "x"}), &[], 1))
            .await
            .unwrap_err();
        assert!(matches!(e, HandlerError::Permanent(ref err) if err.kind == "invalid_input"));
        let e = call("square", ctx(json!({"value": i64::MAX}), &[], 1))
            .await
            .unwrap_err();
        assert!(matches!(e, HandlerError::Permanent(ref err) if err.kind == "overflow"));
    }

    #[tokio::test]
    async fn decision_routes_by_size() {
        let v = call(
            "route_by_size",
            ctx(json!({}), &[("c", json!({"value": 84}))], 1),
        )
        .await
        .unwrap();
        assert_eq!(v["branches"], json!(["large"]));
        let v = call(
            "route_by_size",
            ctx(json!({}), &[("c", json!({"value": 14}))], 1),
        )
        .await
        .unwrap();
        assert_eq!(v["branches"], json!(["small"]));
    }

    #[tokio::test]
    async fn flaky_fails_retryably_until_its_attempt() {
        let e = call("flaky", ctx(json!({}), &[], 2)).await.unwrap_err();
        assert!(matches!(e, HandlerError::Retryable { .. }));
        let v = call("flaky", ctx(json!({}), &[], 3)).await.unwrap();
        assert_eq!(v, json!({"attempts": 3}));
    }

    #[tokio::test]
    async fn csv_files_outside_the_allowed_folder_are_refused() {
        // A task's context names the file: only the fixtures folder (TASKER_CSV_ROOT) may be read.
        let e = call("csv_split", ctx(json!({"csv_path": "/etc/passwd"}), &[], 1))
            .await
            .unwrap_err();
        assert!(
            matches!(e, HandlerError::Permanent(ref err)
                if err.kind == "invalid_input" && err.message.contains("must name a file under")),
            "{e:?}"
        );
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/products.csv"
        );
        let v = call("csv_split", ctx(json!({"csv_path": fixture}), &[], 1))
            .await
            .unwrap();
        assert_eq!(v["rows"], 1000);
    }
}
