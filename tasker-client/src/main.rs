//! `tasker`: submit, inspect, wait for and list tasks from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::Value;
use uuid::Uuid;

use tasker_client::{
    Client, ClientOptions, CreateTask, RepairNote, Step, Task, TaskQuery, Transition,
};

/// `println!` that ends the process quietly when stdout is closed (`tasker list | head`)
/// instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("writing to stdout: {e}");
        }
    }};
}

/// Exit codes, one per class of failure (listed in `tasker --help`).
const EXIT_CODES: &str = "Exit codes:
  0  done (a waited-for task completed)
  1  the task ended in error or was cancelled; a template is invalid or was refused
  2  usage or local input (flags, an unreadable file, invalid JSON)
  3  the task was still running when the wait ran out
  4  the API refused the request (4xx: not found, conflict, invalid)
  5  the orchestrator is unreachable or failed (network, 5xx)";

/// Command-line client of a Tasker orchestrator.
#[derive(Debug, Parser)]
#[command(version, after_help = EXIT_CODES)]
struct Cli {
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
    /// Print raw JSON instead of a summary.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a task from a template, optionally waiting for it to finish.
    Submit {
        namespace: String,
        name: String,
        /// Template version (default: the newest registered).
        #[arg(long)]
        version: Option<String>,
        /// Task context as a JSON object, `@FILE` to read it from a file, or `-` for stdin.
        #[arg(long, default_value = "{}")]
        context: String,
        /// Same key, same task: a retried submit never creates a second task.
        #[arg(long)]
        idempotency_key: Option<String>,
        /// Wait up to this many seconds for the task to finish.
        #[arg(long, num_args = 0..=1, default_missing_value = "60")]
        wait: Option<f64>,
    },
    /// Show a task and its steps (`--json`: one document, `{"task": …, "steps": […]}`).
    Show { id: Uuid },
    /// Wait for a task to finish and show it. Any timeout works (the wait is made of long
    /// polls within the server's cap).
    Wait {
        id: Uuid,
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
    },
    /// List tasks, newest first, a page at a time (`--all`: every page).
    List {
        #[arg(long)]
        state: Option<String>,
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
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
    },
    /// Print a shell completion script: `tasker completions bash > /etc/bash_completion.d/tasker`.
    Completions { shell: clap_complete::Shell },
    /// Cancel a running task.
    Cancel { id: Uuid },
    /// Retry a task that ended in error: the step that failed it runs again with its
    /// template's attempts, and the steps the failure cancelled wait for their parents again.
    Retry {
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
    History { id: Uuid },
    /// List, show, replay and discard dead letters: messages no one could process, kept with
    /// their reason (`tasker dead-letters` lists them).
    #[command(name = "dead-letters")]
    DeadLetters {
        #[command(subcommand)]
        action: Option<DeadLettersCommand>,
    },
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

#[derive(Debug, Subcommand)]
enum DeadLettersCommand {
    /// Newest first, a page at a time (`--all`: every page).
    List {
        /// Dead letters per page (1 to 500).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Start after this id (the `next` a previous page printed).
        #[arg(long)]
        before: Option<i64>,
        #[arg(long)]
        all: bool,
    },
    /// One dead letter: its reason, origin, headers and body.
    Show { id: i64 },
    /// Publish it again, as it was, to the queue it came from (and remove it). A message that
    /// fails again comes back as a dead letter.
    Replay { id: i64 },
    /// Remove it for good.
    Discard { id: i64 },
}

#[derive(Debug, Subcommand)]
enum TemplatesCommand {
    /// List every registered version, with when and by whom it was registered.
    List {
        #[arg(long)]
        namespace: Option<String>,
        #[arg(long)]
        name: Option<String>,
    },
    /// Register every template below each DIR with the orchestrator; a running orchestrator
    /// uses them at once. Exit 1 if any was refused (invalid, or a changed definition under a
    /// version already registered).
    Register {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Recorded as who registered them (default `user:$USER`).
        #[arg(long)]
        by: Option<String>,
    },
    /// Check every template below each DIR offline, exactly as an orchestrator would at
    /// start-up; prints `file:line: problem` and exits 1 on the first invalid one.
    Validate {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Show one template version (the newest unless --version) and its DAG.
    Show {
        namespace: String,
        name: String,
        #[arg(long)]
        version: Option<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit_code(&e)
        }
    }
}

/// The exit code of a failed command, by class ([`EXIT_CODES`]).
fn exit_code(e: &anyhow::Error) -> ExitCode {
    match e.downcast_ref::<tasker_client::Error>() {
        Some(tasker_client::Error::Api { status, .. }) if *status < 500 => ExitCode::from(4),
        Some(tasker_client::Error::Tls(_)) => ExitCode::from(2),
        Some(_) => ExitCode::from(5),
        None => ExitCode::from(2),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let client = Client::with_options(
        &cli.url,
        &ClientOptions {
            token: cli.token.clone(),
            tls_ca_file: cli.tls_ca_file.clone(),
        },
    )?;
    match cli.command {
        Command::Submit {
            namespace,
            name,
            version,
            context,
            idempotency_key,
            wait,
        } => {
            let context = json_arg("--context", &context)?;
            let mut req = CreateTask::new(namespace, name).context(context);
            if let Some(v) = version {
                req = req.version(v);
            }
            if let Some(k) = idempotency_key {
                req = req.idempotency_key(k);
            }
            let task = client.create_task(&req).await?;
            show_or_finish(&client, &task, wait, cli.json).await
        }
        Command::Show { id } => {
            let task = client.task(id, None).await?;
            print_task_and_steps(&task, &client.steps(id).await?, cli.json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Wait { id, timeout } => finish(&client, id, timeout, cli.json).await,
        Command::List {
            state,
            namespace,
            name,
            limit,
            before,
            all,
        } => {
            list(
                &client,
                TaskQuery {
                    state,
                    namespace,
                    name,
                    limit: Some(limit),
                    before,
                },
                all,
                cli.json,
            )
            .await
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "tasker",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Cancel { id } => {
            print_task(&client.cancel(id).await?, cli.json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Retry {
            id,
            step,
            note,
            wait,
        } => {
            let note = note.note();
            let task = match step {
                None => client.retry(id, &note).await?,
                Some(step) => client.retry_step(id, &step, &note).await?,
            };
            show_or_finish(&client, &task, wait, cli.json).await
        }
        Command::Resolve {
            id,
            step,
            result,
            note,
            wait,
        } => {
            let result = json_arg("--result", &result)?;
            let task = client.resolve(id, &step, &result, &note.note()).await?;
            show_or_finish(&client, &task, wait, cli.json).await
        }
        Command::History { id } => {
            print_history(&client.history(id).await?, cli.json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::DeadLetters { action } => dead_letters(&client, action, cli.json).await,
        Command::Templates { action } => templates(&client, action, cli.json).await,
    }
}

async fn dead_letters(
    client: &Client,
    action: Option<DeadLettersCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let action = action.unwrap_or(DeadLettersCommand::List {
        limit: 20,
        before: None,
        all: false,
    });
    match action {
        DeadLettersCommand::List { limit, before, all } => {
            let (mut before, mut every) = (before, Vec::new());
            let mut header = !json;
            loop {
                let page = client.dead_letters(before, Some(limit)).await?;
                if std::mem::take(&mut header) {
                    out!(
                        "{:>8} {:<20} {:>5} {:<32} REASON",
                        "ID",
                        "FIRST SEEN",
                        "SEEN",
                        "QUEUE"
                    );
                }
                if json && !all {
                    out!("{}", serde_json::to_string_pretty(&page)?);
                    return Ok(ExitCode::SUCCESS);
                }
                for d in &page.dead_letters {
                    if !json {
                        out!(
                            "{:>8} {:<20} {:>5} {:<32} {}",
                            d.id,
                            d.first_seen.format("%Y-%m-%d %H:%M:%S"),
                            d.times_seen,
                            d.queue.as_deref().unwrap_or("?"),
                            d.reason
                        );
                    }
                }
                every.extend(page.dead_letters);
                match page.next_before {
                    Some(next) if all => before = Some(next),
                    Some(next) => {
                        eprintln!("more: tasker dead-letters list --before {next}");
                        break;
                    }
                    None => break,
                }
            }
            if json {
                out!("{}", serde_json::to_string_pretty(&every)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        DeadLettersCommand::Show { id } => {
            let d = client.dead_letter(id).await?;
            if json {
                out!("{}", serde_json::to_string_pretty(&d)?);
                return Ok(ExitCode::SUCCESS);
            }
            let i = &d.info;
            out!("dead letter {}", i.id);
            out!("queue       {}", i.queue.as_deref().unwrap_or("unknown"));
            out!("reason      {}", i.reason);
            if let (Some(task), Some(step)) = (i.task_id, i.step_id) {
                out!("task        {task} (step {step})");
            }
            out!(
                "seen        {} time(s), first {}, last {}",
                i.times_seen,
                i.first_seen.format("%Y-%m-%d %H:%M:%S UTC"),
                i.last_seen.format("%Y-%m-%d %H:%M:%S UTC")
            );
            out!("headers     {}", d.headers);
            match (&d.body, &d.body_text, &d.body_base64) {
                (Some(body), _, _) => out!(
                    "body ({} bytes, JSON)\n{}",
                    i.bytes,
                    serde_json::to_string_pretty(body)?
                ),
                (_, Some(text), _) => out!("body ({} bytes, text)\n{text}", i.bytes),
                (_, _, Some(b64)) => out!("body ({} bytes, base64)\n{b64}", i.bytes),
                _ => out!("body ({} bytes)", i.bytes),
            }
            Ok(ExitCode::SUCCESS)
        }
        DeadLettersCommand::Replay { id } => {
            let queue = client.replay_dead_letter(id).await?;
            out!("replayed dead letter {id} to {queue}");
            Ok(ExitCode::SUCCESS)
        }
        DeadLettersCommand::Discard { id } => {
            client.discard_dead_letter(id).await?;
            out!("discarded dead letter {id}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn templates(
    client: &Client,
    action: Option<TemplatesCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let action = action.unwrap_or(TemplatesCommand::List {
        namespace: None,
        name: None,
    });
    match action {
        TemplatesCommand::List { namespace, name } => {
            let list = client
                .templates(namespace.as_deref(), name.as_deref())
                .await?;
            if json {
                out!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(ExitCode::SUCCESS);
            }
            for t in list {
                out!(
                    "{:<40} {}  {:<32} {}",
                    t.key(),
                    t.registered_at.format("%Y-%m-%d %H:%M:%S"),
                    t.registered_by.as_deref().unwrap_or("-"),
                    t.description.as_deref().unwrap_or_default()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        TemplatesCommand::Validate { dirs } => {
            for dir in &dirs {
                match tasker_shared::template::load_dir(dir) {
                    Ok(loaded) if loaded.is_empty() => {
                        eprintln!("{}: no templates (*.yaml, *.yml) found", dir.display());
                        return Ok(ExitCode::from(1));
                    }
                    Ok(loaded) => {
                        for t in loaded {
                            out!("ok  {}  {}", t.template.key(), t.source.display());
                        }
                    }
                    Err(e) => {
                        eprintln!("{e}");
                        return Ok(ExitCode::from(1));
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TemplatesCommand::Register { dirs, by } => {
            let by = by.unwrap_or_else(current_user);
            let mut refused = 0;
            for dir in &dirs {
                // Validated here first: the same errors, before anything reaches the server.
                let loaded = match tasker_shared::template::load_dir(dir) {
                    Ok(loaded) => loaded,
                    Err(e) => {
                        eprintln!("{e}");
                        return Ok(ExitCode::from(1));
                    }
                };
                for t in loaded {
                    let file = t.source.display().to_string();
                    let text = std::fs::read_to_string(&t.source)
                        .with_context(|| format!("reading {file}"))?;
                    match client
                        .register_template(&text, Some(&file), Some(&by))
                        .await
                    {
                        Ok(r) => out!(
                            "{}  {}  {file}",
                            if r.created {
                                "registered"
                            } else {
                                "unchanged "
                            },
                            r.template.key()
                        ),
                        Err(tasker_client::Error::Api {
                            status, message, ..
                        }) if (400..500).contains(&status) => {
                            refused += 1;
                            eprintln!("refused     {}  {file}: {message}", t.template.key());
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            Ok(if refused == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        TemplatesCommand::Show {
            namespace,
            name,
            version,
        } => {
            let t = client
                .template(&namespace, &name, version.as_deref())
                .await?;
            if json {
                out!("{}", serde_json::to_string_pretty(&t)?);
                return Ok(ExitCode::SUCCESS);
            }
            out!("template   {}", t.key());
            if let Some(d) = &t.description {
                out!("           {d}");
            }
            out!(
                "registered {} by {}",
                t.registered_at.format("%Y-%m-%d %H:%M:%S UTC"),
                t.registered_by.as_deref().unwrap_or("unknown")
            );
            let template: tasker_shared::TaskTemplate = serde_json::from_value(t.definition)
                .context("the server sent a definition this CLI cannot read")?;
            let loaded = template
                .validate("<server>")
                .context("the server sent a definition that does not validate")?;
            for line in dag_lines(&loaded) {
                out!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The DAG as text, one step per line in dependency order, indented by depth:
///
/// ```text
/// steps (depth, name, handler, after):
///   0  start       double
///   1    left      square        after start
/// ```
fn dag_lines(loaded: &tasker_shared::template::Loaded) -> Vec<String> {
    let dag = &loaded.dag;
    let depths = dag.depths();
    let mut order: Vec<usize> = (0..dag.len()).collect();
    order.sort_by_key(|&i| (depths[i], i));
    let width = order
        .iter()
        .map(|&i| 2 * depths[i] + dag.name(i).len())
        .max()
        .unwrap_or(0);
    let mut lines = vec![format!("steps ({}), by depth:", dag.len())];
    for i in order {
        let step = &loaded.template.steps[i];
        let named = format!("{}{}", "  ".repeat(depths[i]), dag.name(i));
        let after: Vec<&str> = dag.parents(i).iter().map(|&p| dag.name(p)).collect();
        let mut line = format!(
            "  {:>2}  {named:<width$}  {:<8}  {}",
            depths[i],
            step.step_type.as_str(),
            step.handler
        );
        if !after.is_empty() {
            line.push_str(&format!("  after {}", after.join(", ")));
        }
        lines.push(line);
    }
    lines
}

/// Lists tasks a page at a time; with `all`, every page. `--json`: one JSON document per page
/// (`{"tasks": […], "next_before": …}`), or with `all` one document of every task.
async fn list(
    client: &Client,
    mut q: TaskQuery,
    all: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut every = Vec::new();
    // Printed once the first page is in, so a failure prints nothing but the error.
    let mut header = !json;
    loop {
        let page = client.tasks(&q).await?;
        if std::mem::take(&mut header) {
            out!(
                "{:<38} {:<10} {:<40} {:>10}",
                "ID",
                "STATE",
                "TEMPLATE",
                "MS"
            );
        }
        let next = page.next_before;
        if json && !all {
            out!("{}", serde_json::to_string_pretty(&page)?);
            return Ok(ExitCode::SUCCESS);
        }
        for t in page.tasks {
            if json {
                every.push(t);
                continue;
            }
            out!(
                "{:<38} {:<10} {:<40} {:>10}",
                t.id,
                t.state,
                format!("{}/{}@{}", t.namespace, t.name, t.version),
                t.duration_ms.map(|d| format!("{d:.1}")).unwrap_or_default()
            );
        }
        match next {
            Some(n) if all => q.before = Some(n),
            Some(n) => {
                eprintln!("more: tasker list --before {n} (or --all)");
                break;
            }
            None => break,
        }
    }
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "tasks": every }))?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `task`, or with `wait` waits for it to finish ([`finish`]).
async fn show_or_finish(
    client: &Client,
    task: &Task,
    wait: Option<f64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match wait {
        None => {
            print_task(task, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(secs) => finish(client, task.id, secs, json).await,
    }
}

fn print_history(history: &[Transition], json: bool) -> anyhow::Result<()> {
    if json {
        out!("{}", serde_json::to_string_pretty(history)?);
        return Ok(());
    }
    out!(
        "{:<26} {:<18} {:<28} {:>7}  {:<16} REASON",
        "AT",
        "STEP",
        "TRANSITION",
        "ATTEMPT",
        "BY"
    );
    for h in history {
        out!(
            "{:<26} {:<18} {:<28} {:>7}  {:<16} {}",
            h.at.format("%Y-%m-%d %H:%M:%S%.3f"),
            h.step.as_deref().unwrap_or("(task)"),
            format!("{} -> {}", h.from.as_deref().unwrap_or("-"), h.to),
            h.attempt.map(|a| a.to_string()).unwrap_or_default(),
            h.by.as_deref().unwrap_or("-"),
            h.reason.as_deref().unwrap_or_default()
        );
    }
    Ok(())
}

/// Waits for a task, prints it with its steps; exit 0 if complete, 1 if it failed or was
/// cancelled, 3 if still running when the wait ran out.
async fn finish(client: &Client, id: Uuid, secs: f64, json: bool) -> anyhow::Result<ExitCode> {
    let timeout = Duration::try_from_secs_f64(secs.max(0.0))
        .context("--wait / --timeout must be a number of seconds")?;
    let task = client.wait(id, timeout).await?;
    print_task_and_steps(&task, &client.steps(id).await?, json)?;
    Ok(match task.state.as_str() {
        "complete" => ExitCode::SUCCESS,
        "running" => {
            eprintln!("task {id} is still running after {secs} s");
            ExitCode::from(3)
        }
        _ => ExitCode::from(1),
    })
}

fn print_task(t: &Task, json: bool) -> anyhow::Result<()> {
    if json {
        out!("{}", serde_json::to_string_pretty(t)?);
        return Ok(());
    }
    out!("task     {}", t.id);
    out!("template {}/{}@{}", t.namespace, t.name, t.version);
    out!("state    {}", t.state);
    if let Some(d) = t.duration_ms {
        out!("took     {d:.1} ms");
    }
    if let Some(r) = &t.result {
        out!("result   {r}");
    }
    if let Some(e) = &t.error {
        out!("error    {e}");
    }
    Ok(())
}

/// A task and its steps; `--json`: one document, `{"task": …, "steps": […]}`.
fn print_task_and_steps(task: &Task, steps: &[Step], json: bool) -> anyhow::Result<()> {
    if json {
        out!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "task": task, "steps": steps }))?
        );
        return Ok(());
    }
    print_task(task, false)?;
    print_steps(steps);
    Ok(())
}

fn print_steps(steps: &[Step]) {
    out!(
        "  {:<18} {:<13} {:>7} {:>9} {:>9}  RESULT",
        "STEP",
        "STATE",
        "ATTEMPT",
        "QUEUE ms",
        "RUN ms"
    );
    for s in steps {
        let queue = ms_between(s.dispatched_at, s.started_at);
        let run = ms_between(s.started_at, s.finished_at);
        let shown = s.result.as_ref().or(s.error.as_ref());
        out!(
            "  {:<18} {:<13} {:>7} {:>9} {:>9}  {}",
            s.name,
            s.state,
            format!("{}/{}", s.attempt, s.max_attempts),
            queue,
            run,
            shown.map(Value::to_string).unwrap_or_default()
        );
    }
}

fn ms_between(
    a: Option<chrono::DateTime<chrono::Utc>>,
    b: Option<chrono::DateTime<chrono::Utc>>,
) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!(
            "{:.2}",
            (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0
        ),
        _ => String::new(),
    }
}
