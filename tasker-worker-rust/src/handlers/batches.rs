//! What the batch handlers share: a batch's cursor, and the ranges a split produces.

use serde_json::{Value, json};
use tasker_worker::{HandlerError, StepContext};

/// `{start, end}` of a batch, as the split handlers produce it.
pub(super) fn cursor(ctx: &StepContext) -> Result<(usize, usize), HandlerError> {
    let input = ctx.input.as_ref().ok_or_else(|| {
        HandlerError::permanent("invalid_input", "a batch step needs its batch as input")
    })?;
    let field = |k: &str| {
        input.get(k).and_then(Value::as_u64).ok_or_else(|| {
            HandlerError::permanent("invalid_input", format!("batch input lacks `{k}`"))
        })
    };
    Ok((field("start")? as usize, field("end")? as usize))
}

/// Cursor ranges `[start, end)` covering `0..total` in steps of `size`.
pub(super) fn ranges(total: usize, size: usize) -> Vec<Value> {
    (0..total)
        .step_by(size.max(1))
        .map(|start| json!({ "start": start, "end": (start + size).min(total) }))
        .collect()
}
