//! The Rust steps of the polyglot fixtures (tests/fixtures/task_templates/polyglot): the
//! pipeline's parse stage, and the relay every language runs in a chain across languages.

use serde_json::{Value, json};
use tasker_worker::handler::{HandlerError, StepContext};

/// `{"lines": ["<i>,<user>,<type>,<amount>", …]}` from the ingest step, parsed into
/// `{"events": [[user, type_code, amount], …]}` (click 0, view 1, purchase 2).
pub async fn parse(ctx: StepContext) -> Result<Value, HandlerError> {
    let parents = ctx.parent_results.all().await?;
    let lines = parents
        .get("ingest")
        .and_then(|r| r.get("lines"))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            HandlerError::permanent("invalid_input", "parent `ingest` has no `lines`")
        })?;
    let mut events = Vec::with_capacity(lines.len());
    for line in lines {
        let text = line.as_str().unwrap_or_default();
        let event = parse_line(text).ok_or_else(|| {
            HandlerError::permanent(
                "bad_event",
                format!("not `<i>,<user>,<type>,<amount>`: {line}"),
            )
        })?;
        events.push(json!(event));
    }
    Ok(json!({ "events": events }))
}

fn parse_line(line: &str) -> Option<[u64; 3]> {
    let mut fields = line.split(',');
    let _index: u64 = fields.next()?.parse().ok()?;
    let user: u64 = fields.next()?.parse().ok()?;
    let kind = match fields.next()? {
        "click" => 0,
        "view" => 1,
        "purchase" => 2,
        _ => return None,
    };
    let amount: u64 = fields.next()?.parse().ok()?;
    fields.next().is_none().then_some([user, kind, amount])
}

/// Passes its one parent's `payload` on unchanged (the root takes the context's) and adds
/// `rust` to `hops`.
pub async fn relay(ctx: StepContext) -> Result<Value, HandlerError> {
    let parents = ctx.parent_results.all().await?;
    if parents.len() > 1 {
        return Err(HandlerError::permanent(
            "invalid_input",
            "a relay step has at most one parent",
        ));
    }
    let root = json!({ "payload": ctx.context.get("payload").cloned().unwrap_or(Value::Null), "hops": [] });
    let source = parents.values().next().unwrap_or(&root);
    let mut hops = source["hops"].as_array().cloned().unwrap_or_default();
    hops.push(json!("rust"));
    Ok(json!({ "payload": source["payload"], "hops": hops }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_events_and_bad_ones_are_refused() {
        // benches/pipeline_oracle.py: the first events of seed 42.
        assert_eq!(parse_line("0,5122,view,2826"), Some([5122, 1, 2826]));
        assert_eq!(parse_line("1,2561,purchase,5726"), Some([2561, 2, 5726]));
        assert_eq!(parse_line("2,8215,click,9734"), Some([8215, 0, 9734]));
        for bad in ["", "1,2,tap,3", "1,2,view", "1,2,view,3,4", "x,2,view,3"] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }
}
