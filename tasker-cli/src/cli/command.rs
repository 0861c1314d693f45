//! The commands and their arguments, as clap reads them.

use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde_json::Value;
use uuid::Uuid;

use tasker_client::RepairNote;

use super::alerts::AlertsCommand;
use super::args::{current_user, json_object};
use super::audit::AuditArgs;
use super::count::CountArgs;
use super::dead_letters::DeadLettersCommand;
use super::events::EventsCommand;
use super::limits::LimitsCommand;
use super::operations::{BulkCommand, OperationsCommand};
use super::schedules::SchedulesCommand;
use super::stream::StreamArgs;
use super::templates::TemplatesCommand;
use super::webhooks::WebhooksCommand;

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Create a task from a template, optionally waiting for it to finish; or many tasks
    /// from a file of JSON lines (--from), sent in bulk requests.
    Submit(SubmitArgs),
    /// Send a signal to a task: a wait step waiting for NAME completes with the payload.
    Signal {
        /// The task's id.
        id: Uuid,
        /// The signal's name (what the wait step waits for).
        name: String,
        /// The payload as JSON, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long)]
        payload: Option<String>,
        /// Its id: sending the same id again with the same payload changes nothing.
        #[arg(long = "id")]
        signal_id: Option<String>,
    },
    /// List a task's signals and the steps that consumed them.
    Signals {
        /// The task's id.
        id: Uuid,
    },
    /// Events that start tasks: send NAMESPACE NAME, list, show ID (`tasker events` lists
    /// them). Each template whose trigger (`on:`) matches an event starts a task.
    Events {
        #[command(subcommand)]
        action: Option<EventsCommand>,
    },
    /// Webhooks that turn signed requests of other services into events: list, show NAME,
    /// set NAME --namespace NS [--format github|stripe], delete NAME.
    Webhooks {
        #[command(subcommand)]
        action: Option<WebhooksCommand>,
    },
    /// Alert rules that tell a webhook, Slack or an email when a condition of a namespace fires
    /// and clears: list, show NAME, set NAME --namespace NS --when KIND --webhook URL, apply
    /// FILE… [--prune], delete NAME.
    Alerts {
        #[command(subcommand)]
        action: Option<AlertsCommand>,
    },
    /// Cron schedules that start tasks: list, show, apply FILE…, pause, resume, trigger,
    /// backfill, delete (`tasker schedules` lists them).
    Schedules {
        #[command(subcommand)]
        action: Option<SchedulesCommand>,
    },
    /// Show a task and its steps (`--json`: one document, `{"task": …, "steps": […]}`).
    Show {
        /// The task's id.
        id: Uuid,
    },
    /// Wait for a task to finish and show it. Any timeout works (the wait is made of long
    /// polls within the server's cap).
    Wait {
        /// The task's id.
        id: Uuid,
        /// Seconds to wait before giving up (exit 3).
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
    },
    /// Print what a task's steps stream (`ctx.emit_text`) as it arrives, until the stream is
    /// complete (`--json`: every chunk as a line of JSON).
    Stream(StreamArgs),
    /// List tasks, newest first, a page at a time (`--all`: every page).
    List(ListArgs),
    /// Count the tasks of each state a filter matches.
    Count(CountArgs),
    /// List the live workers: who they are, the namespaces and handlers they serve
    /// (`--all`: also those gone in the last day).
    Workers {
        /// Also the workers gone in the last day.
        #[arg(long)]
        all: bool,
    },
    /// Concurrency and rate keys: list (the default), pause KEY, resume KEY.
    Limits {
        #[command(subcommand)]
        action: Option<LimitsCommand>,
    },
    /// Purge finished tasks now (as the retention policy does on its own): those of the
    /// given states that finished longer ago than --older-than, with their steps and history.
    /// Needs an admin token of every namespace.
    Purge(PurgeArgs),
    /// Retry, resolve or cancel every task a filter matches, as one operation: the exact count
    /// first (`--dry-run`: only that), then its progress until every task was acted on.
    Bulk {
        #[command(subcommand)]
        action: BulkCommand,
    },
    /// Operations by filter (`tasker bulk`): list, show, wait, cancel (`tasker operations`
    /// lists them).
    Operations {
        #[command(subcommand)]
        action: Option<OperationsCommand>,
    },
    /// Show the retention policy the orchestrator runs: how long finished tasks of each state
    /// are kept, the purge's pace, and when a task was last purged.
    Retention,
    /// Print a shell completion script: `tasker completions bash > /etc/bash_completion.d/tasker`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Cancel a running task.
    Cancel {
        /// The task's id.
        id: Uuid,
    },
    /// Retry a task that ended in error: the step that failed it runs again with its
    /// template's attempts, and the steps the failure cancelled wait for their parents again.
    Retry {
        /// The task's id.
        id: Uuid,
        /// Name the failed step (name or id); refused unless it is the one that failed the task.
        #[arg(long)]
        step: Option<String>,
        #[command(flatten)]
        note: NoteArgs,
        /// Then wait up to this many seconds for the task to finish.
        #[arg(long, num_args = 0..=1, default_missing_value = "60")]
        wait: Option<f64>,
    },
    /// Complete the step that failed a task with a result given by hand; the task goes on
    /// from there.
    Resolve {
        /// The task's id.
        id: Uuid,
        /// The failed step (name or id).
        step: String,
        /// The step's result as JSON, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long)]
        result: String,
        #[command(flatten)]
        note: NoteArgs,
        /// Then wait up to this many seconds for the task to finish.
        #[arg(long, num_args = 0..=1, default_missing_value = "60")]
        wait: Option<f64>,
    },
    /// Fetch one attempt of a step as its handler received it (context, parent results, batch,
    /// attempt) and replay it locally: the COMMAND after `--` runs with TASKER_REPLAY naming a
    /// file of those inputs (`-- python -m tasker.testing --handlers handlers.py` runs the
    /// local handler on them); without one, print them.
    Replay(super::replay::ReplayArgs),
    /// Show the engine's clock (its time, next timer, whether a step is with a worker); in
    /// test mode, `advance BY` or `skip` to the next timer (docs/testing.md).
    Clock(super::engine_clock::ClockArgs),
    /// Show a task's history: every task and step transition, oldest first.
    History {
        /// The task's id.
        id: Uuid,
    },
    /// List, show, replay and discard dead letters: messages no one could process, kept with
    /// their reason (`tasker dead-letters` lists them).
    #[command(name = "dead-letters")]
    DeadLetters {
        #[command(subcommand)]
        action: Option<DeadLettersCommand>,
    },
    /// The audit log, newest first: every request that asked to change something (who, what,
    /// when, from where, answered how). Needs an admin token.
    Audit(AuditArgs),
    /// Register, validate, show and list task templates (`tasker templates` lists them).
    Templates {
        #[command(subcommand)]
        action: Option<TemplatesCommand>,
    },
}

// `tasker submit`: one task, or many --from a file.
#[derive(Debug, clap::Args)]
pub(super) struct SubmitArgs {
    /// The template's namespace (with --from: the default of lines that give none).
    #[arg(required_unless_present = "from")]
    pub namespace: Option<String>,
    /// The template's name (with --from: the default of lines that give none).
    #[arg(required_unless_present = "from")]
    pub name: Option<String>,
    /// Create one task per line of this file (`-`: stdin), each a JSON object as `POST
    /// /v1/tasks` takes it (`{"namespace", "name", "context", "idempotency_key", …}`);
    /// all lines are checked before any is sent. Prints what happened to each line.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["context", "idempotency_key", "at", "in", "wait", "priority", "version", "dedupe_key", "debounce_key", "deadline"])]
    pub from: Option<String>,
    /// Template version (default: the newest registered).
    #[arg(long)]
    pub version: Option<String>,
    /// Task context as a JSON object, `@FILE` to read it from a file, or `-` for stdin.
    #[arg(long, default_value = "{}")]
    pub context: String,
    /// Same key, same task: a retried submit never creates a second task.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Start the task at this time (RFC 3339, e.g. 2026-12-01T02:30:00Z); until then it is
    /// `scheduled`.
    #[arg(long, conflicts_with = "in")]
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// Start the task after this long (`10m`, `1h30m`, `7d`).
    #[arg(long = "in", value_name = "DURATION")]
    pub r#in: Option<String>,
    /// Wait up to this many seconds for the task to finish.
    #[arg(long, num_args = 0..=1, default_missing_value = "60")]
    pub wait: Option<f64>,
    /// How soon its steps start when workers are busy (default: the template's, else
    /// normal).
    #[arg(long, value_parser = ["high", "normal", "low"])]
    pub priority: Option<String>,
    /// One task per this key for --dedupe-ttl, even after the task is purged (in place of
    /// --idempotency-key).
    #[arg(
        long,
        value_name = "KEY",
        requires = "dedupe_ttl",
        conflicts_with = "idempotency_key"
    )]
    pub dedupe_key: Option<String>,
    /// How long --dedupe-key answers its task (`24h`).
    #[arg(long, value_name = "DURATION", requires = "dedupe_key")]
    pub dedupe_ttl: Option<String>,
    /// One task per burst of submits with this key (see --debounce).
    #[arg(long, value_name = "KEY", requires = "debounce")]
    pub debounce_key: Option<String>,
    /// The quiet time that ends a burst (`5s`): the task starts this long after the last
    /// submit (trailing) or at the first (leading).
    #[arg(long, value_name = "DURATION", requires = "debounce_key")]
    pub debounce: Option<String>,
    /// The longest a burst lasts from its first submit (`1m`; default: no limit).
    #[arg(long, value_name = "DURATION", requires = "debounce_key")]
    pub debounce_max: Option<String>,
    /// Which submit of a burst starts its task.
    #[arg(long, value_parser = ["trailing", "leading"], requires = "debounce_key")]
    pub debounce_mode: Option<String>,
    /// How long the task may run from its start (`15m`), instead of its template's deadline.
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// What it gets once it runs longer than --deadline.
    #[arg(long, value_parser = ["fail", "cancel", "alert"], default_value = "fail", requires = "deadline")]
    pub deadline_action: String,
}

// `tasker list`: a page of tasks, or every page.
#[derive(Debug, clap::Args)]
pub(super) struct ListArgs {
    /// Only tasks in this state.
    #[arg(long, value_parser = ["scheduled", "running", "complete", "error", "cancelled"])]
    pub state: Option<String>,
    /// Only tasks of this namespace.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Only tasks of this template (its name).
    #[arg(long)]
    pub name: Option<String>,
    /// Only tasks whose id begins with these hexadecimal digits (at least 4; hyphens allowed),
    /// such as the first characters of an id copied from a log.
    #[arg(long)]
    pub id_prefix: Option<String>,
    /// Only the task started with this idempotency key.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Tasks per page (1 to 500).
    #[arg(long, default_value_t = 20)]
    pub limit: i64,
    /// Start after this task id (the `next` a previous page printed).
    #[arg(long)]
    pub before: Option<Uuid>,
    /// Only the tasks this task's child steps started.
    #[arg(long)]
    pub parent: Option<Uuid>,
    /// Only tasks created at or after this time (RFC 3339, e.g. 2026-11-27T12:00:00Z).
    #[arg(long)]
    pub created_after: Option<DateTime<Utc>>,
    /// Only tasks created before this time (RFC 3339).
    #[arg(long)]
    pub created_before: Option<DateTime<Utc>>,
    /// Only tasks whose context contains this JSON object, e.g. '{"order_id": 42}'.
    #[arg(long, value_parser = json_object)]
    pub context: Option<Value>,
    /// Every page, not just the first.
    #[arg(long)]
    pub all: bool,
}

// `tasker purge`: finished tasks, now.
#[derive(Debug, clap::Args)]
pub(super) struct PurgeArgs {
    /// Tasks finished longer ago than this (`36h`, `30d`; at least `1h`).
    #[arg(long, value_name = "DURATION")]
    pub older_than: String,
    /// Only tasks in this state (repeat for several; default: all three).
    #[arg(long = "state", value_parser = ["complete", "error", "cancelled"])]
    pub states: Vec<String>,
    /// Count what would be purged; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Most tasks purged per request (1 to 100000; the command repeats requests until
    /// none are left).
    #[arg(long)]
    pub limit: Option<u32>,
}

/// Who repairs and why, recorded in the task's history.
#[derive(Debug, clap::Args)]
pub(super) struct NoteArgs {
    /// Why (recorded in the task's history).
    #[arg(long)]
    pub reason: Option<String>,
    /// Recorded as who asked (default `user:$USER`).
    #[arg(long)]
    pub by: Option<String>,
}

impl NoteArgs {
    pub(super) fn note(self) -> RepairNote {
        RepairNote {
            by: Some(self.by.unwrap_or_else(current_user)),
            reason: self.reason,
        }
    }
}
