//! The `tasker` command line: its flags and commands, and which module runs each.

use std::process::ExitCode;

use clap::Parser;

use tasker_client::{Client, ClientOptions, CreateTask, TaskQuery};

mod alerts;
mod alerts_file;
mod args;
mod audit;
mod bulk;
mod clock;
mod command;
mod count;
mod dead_letters;
mod display;
mod engine_clock;
mod events;
mod limits;
mod operations;
mod order;
mod output;
pub mod pager;
mod pages;
mod replay;
mod schedules;
mod stream;
mod table;
mod tasks;
mod templates;
mod wait;
mod webhooks;

use args::json_arg;
use command::{Command, ListArgs, PurgeArgs, SubmitArgs};
pub use output::Output;
pub use templates::Invalid;

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
    /// Print raw JSON instead of a summary (the same as `--output json`); a failure too, as
    /// `{"error": {…}}` on stderr.
    #[arg(long, global = true)]
    json: bool,
    /// How answers are printed: `table` (for a person), `json` (every list as
    /// `{"items": [...], "next": ...}`) or `jsonl` (a list's items one per line).
    #[arg(long, global = true, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// Show long values (results, errors, contexts) whole instead of cut to 160 characters.
    /// On a terminal, tables are as wide as it is and states coloured (not with NO_COLOR).
    #[arg(long, global = true)]
    full: bool,
    /// Never page: print long answers (`show`, `history`, `list`, `audit`, `signals`,
    /// `workers`) straight to the terminal instead of through `TASKER_PAGER`, `PAGER` or `less`.
    #[arg(long, global = true)]
    no_pager: bool,
    /// How times are written: `default` (`2026-11-30 14:05:09.123 CET`), `rfc3339` or a
    /// strftime pattern; in the zone `TZ` names (an IANA name; unset: UTC).
    #[arg(
        long,
        global = true,
        env = "TASKER_TIME_FORMAT",
        default_value = "default"
    )]
    time_format: String,
    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// Whether answers, and failures, are printed as JSON (`--json`, `--output json|jsonl`).
    pub fn json(&self) -> bool {
        self.json || self.output != Output::Table
    }
}

/// Runs the command `cli` names.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let client = Client::with_options(
        &cli.url,
        &ClientOptions {
            token: cli.token.clone(),
            tls_ca_file: cli.tls_ca_file.clone(),
        },
    )?;
    let json = cli.json();
    output::init(if cli.json { Output::Json } else { cli.output });
    display::init(cli.full);
    clock::init(&cli.time_format)?;
    let long = matches!(
        cli.command,
        Command::Show { .. }
            | Command::History { .. }
            | Command::List(_)
            | Command::Audit(_)
            | Command::Signals { .. }
            | Command::Workers { .. }
    );
    if long && !json {
        pager::start(cli.no_pager);
    }
    match cli.command {
        Command::Submit(args) => submit(&client, args, json).await,
        Command::Retention => bulk::retention(&client, json).await,
        Command::Count(args) => count::run(&client, args, json).await,
        Command::Bulk { action } => operations::bulk(&client, action, json).await,
        Command::Operations { action } => operations::run(&client, action, json).await,
        Command::Purge(args) => bulk::purge(&client, purge_request(args), json).await,
        Command::Show { id } => tasks::show(&client, id, json).await,
        Command::Wait { id, timeout } => tasks::finish(&client, id, timeout, false, json).await,
        Command::List(args) => {
            let all = args.all;
            tasks::list(&client, task_query(args), all, json).await
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
        Command::Replay(args) => replay::run(&client, args, json).await,
        Command::Clock(args) => engine_clock::run(&client, args, json).await,
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
        Command::Events { action } => events::run(&client, action, json).await,
        Command::Stream(args) => stream::run(&client, args, json).await,
        Command::Webhooks { action } => webhooks::run(&client, action, json).await,
        Command::Alerts { action } => alerts::run(&client, action, json).await,
        Command::Templates { action } => templates::run(&client, action, json).await,
        Command::Audit(args) => audit::run(&client, args, json).await,
    }
}

/// `tasker submit`: the tasks of a file of JSON lines (`--from`), or one task.
async fn submit(client: &Client, a: SubmitArgs, json: bool) -> anyhow::Result<ExitCode> {
    if let Some(from) = &a.from {
        let tasks = bulk::read_lines(from, a.namespace.as_deref(), a.name.as_deref())?;
        return bulk::submit(client, tasks, json).await;
    }
    let context = json_arg("--context", &a.context)?;
    let (Some(namespace), Some(name)) = (a.namespace, a.name) else {
        anyhow::bail!("give the template's NAMESPACE and NAME, or --from FILE");
    };
    let mut req = CreateTask::new(namespace, name).context(context);
    req.run_at = a.at;
    req.delay = a.r#in;
    req.priority = a
        .priority
        .as_deref()
        .and_then(tasker_client::Priority::parse);
    if let Some(v) = a.version {
        req = req.version(v);
    }
    if let Some(k) = a.idempotency_key {
        req = req.idempotency_key(k);
    }
    if let (Some(key), Some(ttl)) = (a.dedupe_key, a.dedupe_ttl) {
        req = req.dedupe(key, ttl);
    }
    if let (Some(key), Some(period)) = (a.debounce_key, a.debounce) {
        let mode = match a.debounce_mode.as_deref() {
            Some("leading") => tasker_client::DebounceMode::Leading,
            _ => tasker_client::DebounceMode::Trailing,
        };
        req = req.debounce(key, period, a.debounce_max.as_deref(), mode);
    }
    if let Some(within) = a.deadline {
        req.deadline = Some(tasker_client::DeadlineSpec {
            within,
            action: tasker_client::DeadlineAction::parse(&a.deadline_action).unwrap_or_default(),
        });
    }
    let task = client.create_task(&req).await?;
    tasks::show_or_finish(client, &task, a.wait, json).await
}

fn purge_request(a: PurgeArgs) -> tasker_client::PurgeRequest {
    tasker_client::PurgeRequest {
        older_than: a.older_than,
        states: (!a.states.is_empty()).then_some(a.states),
        dry_run: a.dry_run,
        limit: a.limit,
    }
}

fn task_query(a: ListArgs) -> TaskQuery {
    TaskQuery {
        state: a.state,
        namespace: a.namespace,
        name: a.name,
        limit: Some(a.limit),
        before: a.before,
        parent: a.parent,
        created_after: a.created_after,
        created_before: a.created_before,
        context: a.context,
        id_prefix: a.id_prefix,
        idempotency_key: a.idempotency_key,
        counts: false,
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
