//! `tasker bulk retry|resolve|cancel|replay|discard`: an operation by filter, with its progress;
//! and `tasker operations`: list, show, wait for and cancel them.

use super::output;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use uuid::Uuid;

use tasker_client::{Client, Operation, OperationFilter, StartOperation};

use super::args::{CreatedArgs, current_user, json_arg, json_object};

#[derive(Debug, Subcommand)]
pub(super) enum BulkCommand {
    /// Retry every task in error the filter matches: the step that failed each runs again
    /// with its template's attempts.
    Retry {
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Complete the failed step of every task in error the filter matches with the same
    /// result, as if its handler had returned it; each task goes on from there.
    Resolve {
        /// The steps' result as JSON, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long)]
        result: String,
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Cancel every running or scheduled task the filter matches.
    Cancel {
        #[command(flatten)]
        filter: FilterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Replay every dead letter the filter matches to the queue it came from (an admin
    /// token; one that may never be replayed is left, and counted skipped).
    Replay {
        #[command(flatten)]
        filter: LetterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Discard every dead letter the filter matches (an admin token).
    Discard {
        #[command(flatten)]
        filter: LetterArgs,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// Which dead letters: every option given must match.
#[derive(Debug, clap::Args)]
pub(super) struct LetterArgs {
    /// Only dead letters whose every entry names a task of this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Only dead letters from this queue (`<prefix>.results`, `<prefix>.steps.<namespace>`).
    #[arg(long)]
    queue: Option<String>,
    /// Only dead letters whose reason starts with this (`result_mismatch`, `malformed`, …).
    #[arg(long)]
    reason_prefix: Option<String>,
    /// When they were first seen (`--since 1h`, `--created-after`, `--created-before`).
    #[command(flatten)]
    created: CreatedArgs,
    /// Only this dead letter (repeat for several).
    #[arg(long = "id")]
    ids: Vec<i64>,
}

impl LetterArgs {
    fn filter(self) -> anyhow::Result<OperationFilter> {
        let (created_after, created_before) = self.created.range()?;
        Ok(OperationFilter {
            namespace: self.namespace,
            queue: self.queue,
            reason: self.reason_prefix,
            created_after,
            created_before,
            dead_letters: (!self.ids.is_empty()).then_some(self.ids),
            ..OperationFilter::default()
        })
    }
}

/// Which tasks: every option given must match.
#[derive(Debug, clap::Args)]
pub(super) struct FilterArgs {
    /// Only tasks of this namespace.
    #[arg(long)]
    namespace: Option<String>,
    /// Only tasks of this template (its name).
    #[arg(long)]
    name: Option<String>,
    /// Only tasks of this template version.
    #[arg(long)]
    version: Option<String>,
    /// Only tasks in this state (retry and resolve take error, the default; cancel takes
    /// running or scheduled, both by default).
    #[arg(long, value_parser = ["scheduled", "running", "error"])]
    state: Option<String>,
    /// Only tasks that this step failed (by name); for cancel, tasks with a step of that name
    /// still in flight.
    #[arg(long)]
    step: Option<String>,
    /// Only tasks whose failure was an error of this kind (`TimeoutError`, ...).
    #[arg(long)]
    error_kind: Option<String>,
    #[command(flatten)]
    created: CreatedArgs,
    /// Only tasks whose context contains this JSON object, e.g. '{"order_id": 42}'.
    #[arg(long, value_parser = json_object)]
    context: Option<Value>,
    /// Only this task (repeat for several).
    #[arg(long = "id")]
    ids: Vec<Uuid>,
}

impl FilterArgs {
    fn filter(self) -> anyhow::Result<OperationFilter> {
        let (created_after, created_before) = self.created.range()?;
        Ok(OperationFilter {
            namespace: self.namespace,
            name: self.name,
            version: self.version,
            state: self.state,
            step: self.step,
            error_kind: self.error_kind,
            created_after,
            created_before,
            context: self.context,
            ids: (!self.ids.is_empty()).then_some(self.ids),
            ..OperationFilter::default()
        })
    }
}

/// How the operation runs, and what the command does meanwhile.
#[derive(Debug, clap::Args)]
pub(super) struct RunArgs {
    /// Why (recorded in each task's history, with the operation's id).
    #[arg(long)]
    reason: Option<String>,
    /// Recorded as who asked (default `user:$USER`).
    #[arg(long)]
    by: Option<String>,
    /// Count the tasks it would act on, and show the newest of them; act on none.
    #[arg(long)]
    dry_run: bool,
    /// Start it and return: follow it with `tasker operations wait ID`.
    #[arg(long)]
    no_wait: bool,
    /// Seconds to follow it before returning (exit 3; it goes on).
    #[arg(long, default_value_t = 3600.0)]
    timeout: f64,
}

#[derive(Debug, Subcommand)]
pub(super) enum OperationsCommand {
    /// Newest first (a token limited to namespaces: the ones it started).
    List {
        /// Operations per page (1 to 500).
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Start after this operation (the `next` a previous page printed).
        #[arg(long)]
        before: Option<Uuid>,
    },
    /// One operation and its progress.
    Show {
        /// The operation's id.
        id: Uuid,
    },
    /// Follow an operation until it ends, with its progress.
    Wait {
        /// The operation's id.
        id: Uuid,
        /// Seconds to wait before giving up (exit 3; it goes on).
        #[arg(long, default_value_t = 3600.0)]
        timeout: f64,
    },
    /// Stop a running operation: the tasks it has not reached are left as they are.
    Cancel {
        /// The operation's id.
        id: Uuid,
    },
}

/// `tasker bulk …`.
pub(super) async fn bulk(
    client: &Client,
    command: BulkCommand,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let (action, result, filter, run) = match command {
        BulkCommand::Retry { filter, run } => ("retry", None, filter.filter()?, run),
        BulkCommand::Resolve {
            result,
            filter,
            run,
        } => (
            "resolve",
            Some(json_arg("--result", &result)?),
            filter.filter()?,
            run,
        ),
        BulkCommand::Cancel { filter, run } => ("cancel", None, filter.filter()?, run),
        BulkCommand::Replay { filter, run } => ("replay", None, filter.filter()?, run),
        BulkCommand::Discard { filter, run } => ("discard", None, filter.filter()?, run),
    };
    let what = noun(action);
    let req = StartOperation {
        action: action.into(),
        filter,
        reason: run.reason,
        by: Some(run.by.unwrap_or_else(current_user)),
        result,
        dry_run: run.dry_run,
    };
    if run.dry_run {
        let count = client.count_operation(&req).await?;
        if json {
            output::one(&count)?;
        } else {
            out!("would {action} {} {what}", count.matched);
            let sample: Vec<String> = count
                .sample
                .iter()
                .map(ToString::to_string)
                .chain(count.dead_letter_sample.iter().map(ToString::to_string))
                .collect();
            for id in &sample {
                out!("  {id}");
            }
            if count.matched > sample.len() as u64 {
                out!("  … and {} more", count.matched - sample.len() as u64);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let op = client.start_operation(&req).await?;
    if !json {
        eprintln!(
            "operation {}: {action} {} {what} (stop it with `tasker operations cancel {}`)",
            op.id, op.matched, op.id
        );
    }
    if run.no_wait {
        return print(&op, json);
    }
    follow(client, op.id, run.timeout, json).await
}

/// `tasker operations …`.
pub(super) async fn run(
    client: &Client,
    command: Option<OperationsCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match command.unwrap_or(OperationsCommand::List {
        limit: 20,
        before: None,
    }) {
        OperationsCommand::List { limit, before } => list(client, limit, before, json).await,
        OperationsCommand::Show { id } => print(&client.operation(id).await?, json),
        OperationsCommand::Wait { id, timeout } => follow(client, id, timeout, json).await,
        OperationsCommand::Cancel { id } => print(&client.cancel_operation(id).await?, json),
    }
}

/// Follows operation `id` with a progress bar on a terminal, then prints it: exit 0 when it
/// completed, 1 when it failed or was cancelled, 3 when `timeout` passed first.
async fn follow(client: &Client, id: Uuid, timeout: f64, json: bool) -> anyhow::Result<ExitCode> {
    let timeout = Duration::try_from_secs_f64(timeout)
        .map_err(|_| anyhow::anyhow!("--timeout must be a number of seconds"))?;
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} ({elapsed})")?,
    );
    let op = client
        .wait_operation(id, timeout, |op| {
            bar.set_length(op.matched);
            bar.set_position(op.acted + op.skipped);
            bar.set_message(format!(
                "{}: {} acted, {} skipped",
                noun(&op.action),
                op.acted,
                op.skipped
            ));
        })
        .await?;
    bar.finish_and_clear();
    print(&op, json)?;
    Ok(match op.state.as_str() {
        "complete" => ExitCode::SUCCESS,
        "running" => {
            eprintln!("still running after {timeout:?}: `tasker operations wait {id}`");
            ExitCode::from(3)
        }
        _ => ExitCode::FAILURE,
    })
}

/// An operation, as JSON or a few lines.
fn print(op: &Operation, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        output::one(op)?;
        return Ok(ExitCode::SUCCESS);
    }
    out!("operation {}", op.id);
    out!("action    {}", op.action);
    out!("state     {}", op.state);
    out!(
        "{:<9} {} matched, {} acted, {} skipped, {} left",
        noun(&op.action),
        op.matched,
        op.acted,
        op.skipped,
        op.left()
    );
    out!("filter    {}", serde_json::to_string(&op.filter)?);
    if let Some(by) = &op.by {
        out!("by        {by}");
    }
    if let Some(reason) = &op.reason {
        out!("reason    {reason}");
    }
    if let Some(note) = &op.note {
        out!("note      {note}");
    }
    out!("created   {}", super::clock::time(op.created_at));
    if let Some(at) = op.finished_at {
        out!("finished  {}", super::clock::time(at));
    }
    Ok(ExitCode::SUCCESS)
}

/// What an action acts on.
fn noun(action: &str) -> &'static str {
    if OperationFilter::of_dead_letters(action) {
        "dead letters"
    } else {
        "tasks"
    }
}

async fn list(
    client: &Client,
    limit: u32,
    before: Option<Uuid>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let page = client.operations(Some(limit), before).await?;
    if json {
        if let Some(next) = page.next_before {
            eprintln!("more: tasker operations list --before {next}");
        }
        output::list(&page.operations, page.next_before)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::table::print(
        &[
            "ID", "CREATED", "ACTION", "STATE", ">MATCHED", ">ACTED", ">SKIPPED", "REASON",
        ],
        page.operations.iter().map(|o| {
            vec![
                o.id.to_string(),
                super::clock::time(o.created_at),
                o.action.clone(),
                o.state.clone(),
                o.matched.to_string(),
                o.acted.to_string(),
                o.skipped.to_string(),
                o.reason.clone().unwrap_or_default(),
            ]
        }),
    );
    if let Some(next) = page.next_before {
        eprintln!("more: tasker operations list --before {next}");
    }
    Ok(ExitCode::SUCCESS)
}
