//! `tasker schedules` (list, show, apply, pause, resume, trigger, backfill, delete) and
//! `tasker signal` / `tasker signals`.

use super::output;
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde_json::Value;
use uuid::Uuid;

use tasker_client::{Client, Schedule, ScheduleChanges};

#[derive(Debug, Subcommand)]
pub(super) enum SchedulesCommand {
    /// List schedules with their next fire.
    List {
        /// Only the schedules of this namespace.
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Show one schedule (NAMESPACE/NAME) with its next five fires.
    Show {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
    },
    /// Create or update the schedules of each FILE (YAML), or of every file in each folder's
    /// `schedules/` folders; a paused schedule stays paused. Exit 1 if any was refused.
    Apply {
        /// Schedule files (YAML), or folders whose `schedules/` folders hold them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Pause a schedule (no fire until resumed), with a note saying why.
    Pause {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
        /// Why it is paused (shown with the schedule).
        #[arg(long)]
        note: Option<String>,
    },
    /// Resume a paused schedule from now (the paused time is not caught up).
    Resume {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
    },
    /// Start a task of the schedule now, whatever its overlap policy.
    Trigger {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
    },
    /// Start the tasks of every fire time in [--from, --to] that has none (at most 1,000).
    Backfill {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
        /// The first fire time to consider (RFC 3339, e.g. 2026-11-01T00:00:00Z).
        #[arg(long)]
        from: DateTime<Utc>,
        /// The last fire time to consider (RFC 3339).
        #[arg(long)]
        to: DateTime<Utc>,
    },
    /// Change its cron expression and time zone.
    Set {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
        /// The new cron expression: 5 fields, or 6 with seconds first (e.g. "30 2 * * *").
        #[arg(long)]
        cron: Option<String>,
        /// The new IANA time zone (e.g. Europe/Paris).
        #[arg(long)]
        timezone: Option<String>,
    },
    /// Delete a schedule (the tasks it started stay).
    Delete {
        /// The schedule, as NAMESPACE/NAME.
        schedule: String,
    },
}

pub(super) async fn run(
    client: &Client,
    action: Option<SchedulesCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(SchedulesCommand::List { namespace: None }) {
        SchedulesCommand::List { namespace } => {
            let all = client.schedules(namespace.as_deref()).await?;
            if json {
                output::list(&all, None::<()>)?;
            } else {
                print_list(&all);
            }
        }
        SchedulesCommand::Show { schedule } => {
            let (ns, name) = key(&schedule)?;
            print_one(&client.schedule(ns, name).await?, json)?;
        }
        SchedulesCommand::Apply { paths } => return apply(client, &paths, json).await,
        SchedulesCommand::Pause { schedule, note } => {
            let (ns, name) = key(&schedule)?;
            print_one(&client.pause_schedule(ns, name, note).await?, json)?;
        }
        SchedulesCommand::Resume { schedule } => {
            let (ns, name) = key(&schedule)?;
            print_one(&client.resume_schedule(ns, name).await?, json)?;
        }
        SchedulesCommand::Trigger { schedule } => {
            let (ns, name) = key(&schedule)?;
            let task = client.trigger_schedule(ns, name).await?;
            if json {
                output::one(&task)?;
            } else {
                out!("started task {} ({})", task.id, task.state);
            }
        }
        SchedulesCommand::Backfill { schedule, from, to } => {
            let (ns, name) = key(&schedule)?;
            let done = client.backfill_schedule(ns, name, from, to).await?;
            if json {
                output::one(&done)?;
            } else {
                out!(
                    "{} tasks started, {} fire times had theirs already",
                    done.created,
                    done.existing
                );
            }
        }
        SchedulesCommand::Set {
            schedule,
            cron,
            timezone,
        } => {
            let (ns, name) = key(&schedule)?;
            let changes = ScheduleChanges {
                cron,
                timezone,
                ..ScheduleChanges::default()
            };
            print_one(&client.update_schedule(ns, name, &changes).await?, json)?;
        }
        SchedulesCommand::Delete { schedule } => {
            let (ns, name) = key(&schedule)?;
            client.delete_schedule(ns, name).await?;
            if !json {
                out!("deleted {ns}/{name}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `NAMESPACE/NAME`.
fn key(s: &str) -> anyhow::Result<(&str, &str)> {
    s.split_once('/')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .ok_or_else(|| anyhow::anyhow!("name a schedule as NAMESPACE/NAME (got {s:?})"))
}

/// Checks every file offline first (file:line for a problem), then saves each.
async fn apply(client: &Client, paths: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mut specs = Vec::new();
    for path in paths {
        if path.is_dir() {
            specs.extend(tasker_shared::template::load_schedules(path)?);
            continue;
        }
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{label}: cannot read it: {e}"))?;
        // Parsed in a child of this program, killed at its budget.
        let parsed = tasker_shared::template::child::parse_schedules(
            vec![(label, text)],
            tasker_shared::template::child::PARSE_BUDGET,
        );
        for spec in parsed {
            specs.push((path.clone(), spec?));
        }
    }
    if specs.is_empty() {
        anyhow::bail!("no schedule files found");
    }
    let mut refused = false;
    for (file, spec) in specs {
        match client.put_schedule(&spec).await {
            Ok((s, created)) => {
                if json {
                    out!("{}", serde_json::to_string(&s)?);
                } else {
                    let what = if created { "created" } else { "updated" };
                    out!("{what} {}/{} ({})", s.namespace, s.name, file.display());
                }
            }
            Err(tasker_client::Error::Api {
                status,
                code,
                message,
            }) if status < 500 => {
                eprintln!("{}: refused: {message} ({code})", file.display());
                refused = true;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(if refused {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_list(all: &[Schedule]) {
    super::table::print(
        &[
            "SCHEDULE",
            "CRON",
            "TIMEZONE",
            "NEXT FIRE",
            ">FIRES",
            ">SKIPS",
            "STATE",
        ],
        all.iter().map(|s| {
            let state = if s.paused {
                format!("paused {}", s.note.as_deref().unwrap_or_default())
            } else {
                "active".into()
            };
            vec![
                format!("{}/{}", s.namespace, s.name),
                s.cron.clone(),
                s.timezone.clone(),
                super::clock::maybe(s.next_fire_at),
                s.fires.to_string(),
                s.skipped.to_string(),
                state.trim_end().to_owned(),
            ]
        }),
    );
}

fn print_one(s: &Schedule, json: bool) -> anyhow::Result<()> {
    if json {
        output::one(s)?;
        return Ok(());
    }
    out!("schedule  {}/{}", s.namespace, s.name);
    out!(
        "template  {}/{}@{}",
        s.namespace,
        s.template,
        s.version.as_deref().unwrap_or("newest")
    );
    out!("cron      {} ({})", s.cron, s.timezone);
    out!("overlap   {}; catch-up {}", s.overlap, s.catch_up);
    out!("context   {}", s.context);
    if s.paused {
        out!("paused    {}", s.note.as_deref().unwrap_or("(no note)"));
    }
    if s.upcoming.is_empty() {
        out!("next      {}", super::clock::maybe(s.next_fire_at));
    }
    out!(
        "last      {} (task {})",
        super::clock::maybe(s.last_fire_at),
        s.last_task_id
            .map(|t| t.to_string())
            .unwrap_or_else(|| "-".into())
    );
    out!("fires     {}; skipped {}", s.fires, s.skipped);
    for (i, t) in s.upcoming.iter().enumerate() {
        let label = if i == 0 { "next" } else { "then" };
        out!("{label:<9} {}", super::clock::time(*t));
    }
    Ok(())
}

/// `tasker signal`.
pub(super) async fn signal(
    client: &Client,
    id: Uuid,
    name: &str,
    payload: Option<Value>,
    signal_id: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let sent = client.signal(id, name, payload, signal_id).await?;
    if json {
        output::one(&sent.signal)?;
    } else if sent.created {
        out!(
            "signal {} ({}) sent to task {id}",
            sent.signal.name,
            sent.signal.signal_id
        );
    } else {
        out!(
            "signal {} ({}) was sent already",
            sent.signal.name,
            sent.signal.signal_id
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `tasker signals`.
pub(super) async fn signals(client: &Client, id: Uuid, json: bool) -> anyhow::Result<ExitCode> {
    let all = client.signals(id).await?;
    if json {
        output::list(&all, None::<()>)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::table::print(
        &["NAME", "ID", "RECEIVED", "CONSUMED BY", "PAYLOAD"],
        all.into_iter().map(|s| {
            vec![
                s.name,
                s.signal_id,
                super::clock::time(s.received_at),
                s.consumed_by.unwrap_or_else(|| "-".into()),
                s.payload.to_string(),
            ]
        }),
    );
    Ok(ExitCode::SUCCESS)
}
