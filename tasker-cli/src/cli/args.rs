//! What several commands read the same way: JSON arguments, and who runs the command.

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// `user:$USER` (or `$LOGNAME`): who runs this command, as recorded by repairs and
/// registrations.
pub(super) fn current_user() -> String {
    let name = ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    format!("user:{name}")
}

/// A JSON object given inline (clap's parser of `list --context`).
pub(super) fn json_object(value: &str) -> Result<Value, String> {
    match serde_json::from_str(value) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("a JSON object is needed, e.g. '{\"order_id\": 42}'".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// A JSON argument: inline, `@FILE`, or `-` for stdin.
pub(super) fn json_arg(flag: &str, value: &str) -> anyhow::Result<Value> {
    let (text, from) = if value == "-" {
        (
            std::io::read_to_string(std::io::stdin()).context("reading stdin")?,
            "stdin".to_owned(),
        )
    } else if let Some(path) = value.strip_prefix('@') {
        (
            std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
            path.to_owned(),
        )
    } else {
        (value.to_owned(), flag.to_owned())
    };
    serde_json::from_str(&text).with_context(|| format!("{from} is not valid JSON ({flag})"))
}

/// The creation time a filter starts at: `--since DURATION` ago (`1h`, `7d`), else
/// `--created-after`.
pub(super) fn created_after(
    since: Option<&str>,
    created_after: Option<DateTime<Utc>>,
) -> anyhow::Result<Option<DateTime<Utc>>> {
    match since {
        Some(since) => {
            let d = tasker_shared::time::parse_duration("--since", since)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(Some(Utc::now() - chrono::Duration::from_std(d)?))
        }
        None => Ok(created_after),
    }
}
