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

/// A range of creation times: from, to (either open).
pub(super) type Range = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// When the tasks a filter takes were created.
#[derive(Debug, clap::Args)]
pub(super) struct CreatedArgs {
    /// Only tasks created within this long (`1h`, `30m`, `7d`).
    #[arg(long, value_name = "DURATION", conflicts_with = "created_after")]
    since: Option<String>,
    /// Only tasks created at or after this time (RFC 3339).
    #[arg(long)]
    created_after: Option<DateTime<Utc>>,
    /// Only tasks created before this time (RFC 3339).
    #[arg(long)]
    created_before: Option<DateTime<Utc>>,
}

impl CreatedArgs {
    /// `(created_after, created_before)`: `--since DURATION` ago (`1h`, `7d`), else
    /// `--created-after`; and `--created-before`.
    pub(super) fn range(&self) -> anyhow::Result<Range> {
        let after = match &self.since {
            Some(since) => {
                let d = tasker_shared::time::parse_duration("--since", since)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                Some(Utc::now() - chrono::Duration::from_std(d)?)
            }
            None => self.created_after,
        };
        Ok((after, self.created_before))
    }
}
