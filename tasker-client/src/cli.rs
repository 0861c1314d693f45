//! The `tasker` command line: its flags and commands, and which module runs each.

use std::process::ExitCode;

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};
use serde_json::Value;
use uuid::Uuid;

use tasker_client::{Client, ClientOptions, CreateTask, RepairNote, TaskQuery};

mod audit;
mod bulk;
mod dead_letters;
mod limits;
mod pages;
mod schedules;
mod table;
mod tasks;
mod templates;
mod wait;

use dead_letters::DeadLettersCommand;
use limits::LimitsCommand;
use schedules::SchedulesCommand;
pub use templates::Invalid;
use templates::TemplatesCommand;

/// Exit codes, one per class of failure (listed in `tasker --help`).
pub const EXIT_CODES: &str = "Exit codes:
  0  done (a waited-for task completed)
  1  the task ended in error or was cancelled; a template is invalid or was refused
  2  usage or local input (flags, an unreadable file, invalid JSON)
  3  the task was still running when the wait ran out
  4  the API refused the request (4xx: not found, conflict, invalid)
  5  the orchestrator is unreachable or failed (network, 5xx)
  130  Ctrl-C ended a wait (the task goes on)";

/// Command-line client of a Tasker orchestrator.
#[derive(Debug, Parser)]
#[command(version, after_help = EXIT_CODES)]
pub struct Cli {
    /// Base URL of the orchestrator API.
    #[arg(
        long,
        env = "TASKER_URL",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    url: String,
    /// API token, for an orchestrator that requires one (`Authorization: Bearer`).
    #[arg(long, env = "TASKER_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// PEM file of CA certificates to trust for an https:// orchestrator (a private CA).
    #[arg(long, env = "TASKER_TLS_CA_FILE", global = true)]
    tls_ca_file: Option<std::path::PathBuf>,
    /// Print raw JSON instead of a summary; a failure too, as `{"error": {…}}` on stderr.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a task from a template, optionally waiting for it to finish; or many tasks
    /// from a file of JSON lines (--from), sent in bulk requests.
    Submit {
        /// The template's namespace (with --from: the default of lines that give none).
        #[arg(required_unless_present = "from")]
        namespace: Option<String>,
        /// The template's name (with --from: the default of lines that give none).
        #[arg(required_unless_present = "from")]
        name: Option<String>,
        /// Create one task per line of this file (`-`: stdin), each a JSON object as `POST
        /// /v1/tasks` takes it (`{"namespace", "name", "context", "idempotency_key", …}`);
        /// all lines are checked before any is sent. Prints what happened to each line.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["context", "idempotency_key", "at", "in", "wait", "priority", "version"])]
        from: Option<String>,
        /// Template version (default: the newest registered).
        #[arg(long)]
        version: Option<String>,
        /// Task context as a JSON object, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long, default_value = "{}")]
        context: String,
        /// Same key, same task: a retried submit never creates a second task.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// Start the task at this time (RFC 3339, e.g. 2026-12-01T02:30:00Z); until then it is
        /// `scheduled`.
        #[arg(long, conflicts_with = "in")]
        at: Option<chrono::DateTime<chrono::Utc>>,
        /// Start the task after this long (`10m`, `1h30m`, `7d`).
        #[arg(long = "in", value_name = "DURATION")]
        r#in: Option<String>,
        /// Wait up to this many seconds for the task to finish.
        #[arg(long, num_args = 0..=1, default_missing_value = "60")]
        wait: Option<f64>,
        /// How soon its steps start when workers are busy (default: the template's, else
        /// normal).
        #[arg(long, value_parser = ["high", "normal", "low"])]
        priority: Option<String>,
    },
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
    /// List tasks, newest first, a page at a time (`--all`: every page).
    List {
        /// Only tasks in this state.
        #[arg(long, value_parser = ["scheduled", "running", "complete", "error", "cancelled"])]
        state: Option<String>,
        /// Only tasks of this namespace.
        #[arg(long)]
        namespace: Option<String>,
        /// Only tasks of this template (its name).
        #[arg(long)]
        name: Option<String>,
        /// Tasks per page (1 to 500).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Start after this task id (the `next` a previous page printed).
        #[arg(long)]
        before: Option<Uuid>,
        /// Only the tasks this task's child steps started.
        #[arg(long)]
        parent: Option<Uuid>,
        /// Only tasks created at or after this time (RFC 3339, e.g. 2026-11-27T12:00:00Z).
        #[arg(long)]
        created_after: Option<DateTime<Utc>>,
        /// Only tasks created before this time (RFC 3339).
        #[arg(long)]
        created_before: Option<DateTime<Utc>>,
        /// Only tasks whose context contains this JSON object, e.g. '{"order_id": 42}'.
        #[arg(long, value_parser = json_object)]
        context: Option<Value>,
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
    },
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
    Purge {
        /// Tasks finished longer ago than this (`36h`, `30d`; at least `1h`).
        #[arg(long, value_name = "DURATION")]
        older_than: String,
        /// Only tasks in this state (repeat for several; default: all three).
        #[arg(long = "state", value_parser = ["complete", "error", "cancelled"])]
        states: Vec<String>,
        /// Count what would be purged; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Most tasks purged per request (1 to 100000; the command repeats requests until
        /// none are left).
        #[arg(long)]
        limit: Option<u32>,
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
    Audit(audit::AuditArgs),
    /// Register, validate, show and list task templates (`tasker templates` lists them).
    Templates {
        #[command(subcommand)]
        action: Option<TemplatesCommand>,
    },
}

/// Who repairs and why, recorded in the task's history.
#[derive(Debug, clap::Args)]
struct NoteArgs {
    /// Why (recorded in the task's history).
    #[arg(long)]
    reason: Option<String>,
    /// Recorded as who asked (default `user:$USER`).
    #[arg(long)]
    by: Option<String>,
}

impl NoteArgs {
    fn note(self) -> RepairNote {
        RepairNote {
            by: Some(self.by.unwrap_or_else(current_user)),
            reason: self.reason,
        }
    }
}

/// `user:$USER` (or `$LOGNAME`): who runs this command, as recorded by repairs and
/// registrations.
fn current_user() -> String {
    let name = ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    format!("user:{name}")
}

/// A JSON object given inline (clap's parser of `list --context`).
fn json_object(value: &str) -> Result<Value, String> {
    match serde_json::from_str(value) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("a JSON object is needed, e.g. '{\"order_id\": 42}'".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// A JSON argument: inline, `@FILE`, or `-` for stdin.
fn json_arg(flag: &str, value: &str) -> anyhow::Result<Value> {
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

/// Runs the command `cli` names.
impl Cli {
    /// Whether answers, and failures, are printed as JSON (`--json`).
    pub fn json(&self) -> bool {
        self.json
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let client = Client::with_options(
        &cli.url,
        &ClientOptions {
            token: cli.token.clone(),
            tls_ca_file: cli.tls_ca_file.clone(),
        },
    )?;
    let json = cli.json;
    match cli.command {
        Command::Submit {
            namespace,
            name,
            from: Some(from),
            ..
        } => {
            let tasks = bulk::read_lines(&from, namespace.as_deref(), name.as_deref())?;
            bulk::submit(&client, tasks, json).await
        }
        Command::Retention => bulk::retention(&client, json).await,
        Command::Purge {
            older_than,
            states,
            dry_run,
            limit,
        } => {
            let req = tasker_client::PurgeRequest {
                older_than,
                states: (!states.is_empty()).then_some(states),
                dry_run,
                limit,
            };
            bulk::purge(&client, req, json).await
        }
        Command::Submit {
            namespace,
            name,
            from: None,
            version,
            context,
            idempotency_key,
            at,
            r#in,
            wait,
            priority,
        } => {
            let context = json_arg("--context", &context)?;
            let (Some(namespace), Some(name)) = (namespace, name) else {
                anyhow::bail!("give the template's NAMESPACE and NAME, or --from FILE");
            };
            let mut req = CreateTask::new(namespace, name).context(context);
            req.run_at = at;
            req.delay = r#in;
            req.priority = priority.as_deref().and_then(tasker_client::Priority::parse);
            if let Some(v) = version {
                req = req.version(v);
            }
            if let Some(k) = idempotency_key {
                req = req.idempotency_key(k);
            }
            let task = client.create_task(&req).await?;
            tasks::show_or_finish(&client, &task, wait, json).await
        }
        Command::Show { id } => tasks::show(&client, id, json).await,
        Command::Wait { id, timeout } => tasks::finish(&client, id, timeout, false, json).await,
        Command::List {
            state,
            namespace,
            name,
            limit,
            before,
            parent,
            created_after,
            created_before,
            context,
            all,
        } => {
            let q = TaskQuery {
                state,
                namespace,
                name,
                limit: Some(limit),
                before,
                parent,
                created_after,
                created_before,
                context,
            };
            tasks::list(&client, q, all, json).await
        }
        Command::Workers { all } => tasks::workers(&client, all, json).await,
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "tasker",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { id } => tasks::cancel(&client, id, json).await,
        Command::Retry {
            id,
            step,
            note,
            wait,
        } => tasks::retry(&client, id, step, note.note(), wait, json).await,
        Command::Resolve {
            id,
            step,
            result,
            note,
            wait,
        } => {
            let result = json_arg("--result", &result)?;
            let task = client.resolve(id, &step, &result, &note.note()).await?;
            tasks::show_or_finish(&client, &task, wait, json).await
        }
        Command::History { id } => tasks::history(&client, id, json).await,
        Command::Signal {
            id,
            name,
            payload,
            signal_id,
        } => {
            let payload = payload.map(|p| json_arg("--payload", &p)).transpose()?;
            schedules::signal(&client, id, &name, payload, signal_id, json).await
        }
        Command::Signals { id } => schedules::signals(&client, id, json).await,
        Command::Schedules { action } => schedules::run(&client, action, json).await,
        Command::Limits { action } => limits::run(&client, action, json).await,
        Command::DeadLetters { action } => dead_letters::run(&client, action, json).await,
        Command::Templates { action } => templates::run(&client, action, json).await,
        Command::Audit(args) => audit::run(&client, args, json).await,
    }
}

#[cfg(test)]
mod tests {
    /// clap checks a command's definition only when it is parsed; a test checks them all.
    #[test]
    fn every_command_is_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    /// `tasker X --help` explains every argument of every command.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.get_help().is_none() && !["help", "version"].contains(&id) {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(
            &<super::Cli as clap::CommandFactory>::command(),
            "tasker",
            &mut missing,
        );
        assert!(missing.is_empty(), "arguments without help: {missing:#?}");
    }
}
