//! Handlers that stream (docs/streams.md): what the stream tests and benchmarks run.

use serde_json::{Value, json};
use tasker_worker::{HandlerError, StepContext};

/// Emits `count` (5 by default) text chunks `t0`, `t1` … on `topic` (`tokens` by default),
/// each `pad` bytes longer with spaces if `pad` is set, and a JSON chunk `{"i"}` on `progress`
/// after each when `progress` is true. With `ignore_errors`, a refused chunk is passed over (the
/// step must fail all the same once it went past `worker.max_stream_bytes`); otherwise the
/// refusal fails the step. With `fail_first`, attempt 1 fails (retryably) once it has emitted.
/// `pace_ms` waits that long before each chunk (a stream at idle, as a model's tokens come).
/// Returns `{"emitted", "attempt"}`.
pub async fn stream_emitter(ctx: StepContext) -> Result<Value, HandlerError> {
    let count = ctx
        .context
        .get("count")
        .and_then(Value::as_u64)
        .unwrap_or(5);
    let topic = ctx
        .context
        .get("topic")
        .and_then(Value::as_str)
        .unwrap_or("tokens")
        .to_owned();
    let pad = ctx.context.get("pad").and_then(Value::as_u64).unwrap_or(0) as usize;
    let progress = ctx.context.get("progress").and_then(Value::as_bool) == Some(true);
    let ignore = ctx.context.get("ignore_errors").and_then(Value::as_bool) == Some(true);
    let pace = ctx
        .context
        .get("pace_ms")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut emitted = 0u64;
    for i in 0..count {
        if pace > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(pace)).await;
        }
        let text = format!("t{i}{}", " ".repeat(pad));
        match ctx.emit_text(&topic, &text) {
            Ok(()) => emitted += 1,
            Err(_) if ignore => {}
            Err(e) => return Err(e.into()),
        }
        if progress {
            ctx.emit("progress", json!({ "i": i }))?;
        }
    }
    if ctx.attempt == 1 && ctx.context.get("fail_first").and_then(Value::as_bool) == Some(true) {
        return Err(HandlerError::retryable(
            "transient",
            "the first attempt fails",
        ));
    }
    Ok(json!({ "emitted": emitted, "attempt": ctx.attempt }))
}
