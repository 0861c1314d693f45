//! `tasker count`: how many tasks of each state a filter matches.

use super::output;
use std::process::ExitCode;

use serde_json::Value;
use uuid::Uuid;

use tasker_client::{Client, TaskQuery};

use super::args::{CreatedArgs, json_object};

#[derive(Debug, clap::Args)]
pub(super) struct CountArgs {
    /// Only tasks of this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Only tasks of this template (its name).
    #[arg(long)]
    name: Option<String>,
    /// Only the tasks this task's child steps started.
    #[arg(long)]
    parent: Option<Uuid>,
    #[command(flatten)]
    created: CreatedArgs,
    /// Only tasks whose context contains this JSON object, e.g. '{"order_id": 42}'.
    #[arg(long, value_parser = json_object)]
    context: Option<Value>,
}

/// Prints the count of each state (`--json`: `{scheduled, running, complete, error, cancelled,
/// total}`).
pub(super) async fn run(client: &Client, a: CountArgs, json: bool) -> anyhow::Result<ExitCode> {
    let (created_after, created_before) = a.created.range()?;
    let counts = client
        .task_counts(&TaskQuery {
            namespace: a.namespace,
            name: a.name,
            parent: a.parent,
            created_after,
            created_before,
            context: a.context,
            ..TaskQuery::default()
        })
        .await?;
    if json {
        output::one(&counts)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::table::print(
        &["STATE", ">TASKS"],
        [
            ("scheduled", counts.scheduled),
            ("running", counts.running),
            ("complete", counts.complete),
            ("error", counts.error),
            ("cancelled", counts.cancelled),
            ("total", counts.total),
        ]
        .iter()
        .map(|(state, n)| vec![(*state).to_owned(), n.to_string()]),
    );
    Ok(ExitCode::SUCCESS)
}
