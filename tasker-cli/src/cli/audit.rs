//! `tasker audit`: the audit log, newest first — who asked to change what, when, from where,
//! and what they were answered.

use std::process::ExitCode;

use chrono::{DateTime, Utc};

use tasker_client::{AuditEntry, AuditQuery, Client};

use super::pages::{self, Listed};

/// The filters and paging of `tasker audit`.
#[derive(Debug, clap::Args)]
pub(super) struct AuditArgs {
    /// Only requests naming this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Only requests made with the token of this name (`--token` is the CLI's own token).
    #[arg(long)]
    token_name: Option<String>,
    /// Only requests to this route pattern (`/v1/tasks/{id}/cancel`).
    #[arg(long)]
    route: Option<String>,
    /// Only requests with this method.
    #[arg(long, value_parser = ["POST", "PUT", "PATCH", "DELETE"], ignore_case = true)]
    method: Option<String>,
    /// Only requests that arrived at or after this time (RFC 3339).
    #[arg(long)]
    since: Option<DateTime<Utc>>,
    /// Only requests that arrived before this time (RFC 3339).
    #[arg(long)]
    until: Option<DateTime<Utc>>,
    /// Rows per page (1 to 500).
    #[arg(long, default_value_t = 20)]
    limit: i64,
    /// Start after this id (the `more:` a previous page printed).
    #[arg(long)]
    before: Option<i64>,
    /// Every page, not just the first.
    #[arg(long)]
    all: bool,
}

/// Newest first, a page at a time; with `--all`, every page.
pub(super) async fn run(client: &Client, args: AuditArgs, json: bool) -> anyhow::Result<ExitCode> {
    let query = AuditQuery {
        namespace: args.namespace,
        token: args.token_name,
        route: args.route,
        method: args.method.map(|m| m.to_ascii_uppercase()),
        since: args.since,
        until: args.until,
        limit: Some(args.limit),
        before: None,
    };
    let fetch = |before| {
        let query = AuditQuery {
            before,
            ..query.clone()
        };
        async move {
            let page = client.audit(&query).await?;
            anyhow::Ok((page.entries, page.next_before))
        }
    };
    if let Listed::Rows(every) =
        pages::read(args.before, args.all, json, "tasker audit", fetch).await?
    {
        super::table::print(
            &[">ID", "AT", "TOKEN", "REQUEST", ">STATUS", "PEER", "TARGET"],
            every.iter().map(row),
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn row(e: &AuditEntry) -> Vec<String> {
    vec![
        e.id.to_string(),
        super::clock::time(e.at),
        e.token_name.clone().unwrap_or_else(|| "-".into()),
        format!("{} {}", e.method, e.route),
        e.status.to_string(),
        e.peer.clone().unwrap_or_else(|| "-".into()),
        target(e),
    ]
}

/// What the request acted on, in one cell: `namespaces: a,b task: … template: …`.
fn target(e: &AuditEntry) -> String {
    let mut parts = Vec::new();
    if !e.namespaces.is_empty() {
        parts.push(format!("namespaces: {}", e.namespaces.join(",")));
    }
    if let Some(task) = e.task_id {
        parts.push(format!("task: {task}"));
    }
    for (kind, value) in e.target.as_object().into_iter().flatten() {
        let value = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        parts.push(format!("{kind}: {value}"));
    }
    parts.join("  ")
}
