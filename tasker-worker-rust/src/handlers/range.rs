//! `batch_numbers`: engine edge cases of batch processing with plain integers.

use serde_json::{Value, json};
use tasker_worker::{HandlerError, StepContext};

use super::batches::{cursor, ranges};

fn field(ctx: &StepContext, key: &str) -> Option<u64> {
    ctx.context.get(key).and_then(Value::as_u64)
}

/// Ranges over `0..count` of `batch_size` numbers.
pub(super) async fn split(ctx: StepContext) -> Result<Value, HandlerError> {
    let count = field(&ctx, "count").unwrap_or(0) as usize;
    let size = field(&ctx, "batch_size").unwrap_or(100) as usize;
    // Moved into the result, not copied: `json!` would serialize the list into a second tree.
    let mut result = serde_json::Map::new();
    result.insert("batches".into(), Value::Array(ranges(count, size)));
    Ok(Value::Object(result))
}

/// Sum of the range; batch number `fail_batch` (by its start / batch_size) fails for good.
pub(super) async fn sum(ctx: StepContext) -> Result<Value, HandlerError> {
    let (start, end) = cursor(&ctx)?;
    let size = field(&ctx, "batch_size").unwrap_or(100) as usize;
    if field(&ctx, "fail_batch").map(|f| f as usize) == Some(start / size.max(1)) {
        return Err(HandlerError::permanent(
            "batch_failed",
            format!("batch starting at {start} fails on purpose"),
        ));
    }
    let sum: u64 = (start as u64..end as u64).sum();
    Ok(json!({ "sum": sum, "count": end - start }))
}

/// Adds the batch sums; counts failed batches. Reads the parent results one at a time, so a
/// 100,000-batch task never holds them all.
pub(super) async fn total(ctx: StepContext) -> Result<Value, HandlerError> {
    let (mut sum, mut count, mut batches, mut failed) = (0u64, 0u64, 0u64, 0u64);
    let mut parents = ctx.parent_results.each();
    while let Some((_, r)) = parents.next().await? {
        if r.get("failed").and_then(Value::as_bool) == Some(true) {
            failed += 1;
        } else if let Some(s) = r.get("sum").and_then(Value::as_u64) {
            sum += s;
            count += r["count"].as_u64().unwrap_or(0);
            batches += 1;
        }
    }
    Ok(json!({ "sum": sum, "count": count, "batches": batches, "failed_batches": failed }))
}
