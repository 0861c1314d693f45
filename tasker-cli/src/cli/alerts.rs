//! `tasker alerts`: rules that watch a condition of one namespace (failures, deadlines passed,
//! steps waiting, schedule fires skipped, dead letters) and tell a webhook or a Slack-compatible
//! URL when it fires and when it clears. Set one (admin; Tasker makes a webhook sink's secret
//! unless given one, and prints it this once), apply files of them, list, show, delete.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use tasker_client::{Alert, AlertCondition, AlertKind, AlertSink, Client, PutAlert};

use super::output;
use super::webhooks::secret_arg;

#[derive(Debug, Subcommand)]
pub(super) enum AlertsCommand {
    /// The alert rules of the namespaces your token covers, and their state.
    List,
    /// One alert rule and what it last did (never its secret).
    Show {
        /// The rule's name.
        name: String,
    },
    /// Create alert rule NAME, or replace all of its settings.
    Set(Box<SetAlert>),
    /// Create or update the alert rules each FILE (YAML) declares for its namespace; with
    /// --prune, remove those namespaces' rules no file declares. Exit 1 if any was refused.
    Apply {
        /// Alert files: `namespace:` and `alerts:` (rules by name; see docs/events.md).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
        /// Remove the rules of the files' namespaces that no file declares.
        #[arg(long)]
        prune: bool,
    },
    /// Remove an alert rule: it is checked no more.
    Delete {
        /// The rule's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(super) struct SetAlert {
    /// The rule's name.
    name: String,
    /// The namespace it watches.
    #[arg(long)]
    namespace: String,
    /// What it watches.
    #[arg(long, value_parser = ["failures", "deadline_passed", "steps_waiting", "schedule_skipped", "dead_letters"])]
    when: String,
    /// Only tasks of this template (failures, deadline_passed).
    #[arg(long)]
    template: Option<String>,
    /// Only this schedule (schedule_skipped).
    #[arg(long)]
    schedule: Option<String>,
    /// How many make it fire (1 by default).
    #[arg(long)]
    count: Option<u32>,
    /// The window counted back from now (`5m` by default).
    #[arg(long)]
    within: Option<String>,
    /// How long a step has waited to count (steps_waiting; `5m` by default).
    #[arg(long)]
    longer_than: Option<String>,
    /// A URL to POST each notice to as signed JSON.
    #[arg(long, conflicts_with = "slack", required_unless_present_any = ["slack", "email"])]
    webhook: Option<String>,
    /// A Slack-compatible incoming-webhook URL to POST `{"text": …}` to.
    #[arg(long, conflicts_with = "email")]
    slack: Option<String>,
    /// Email addresses to send each notice to (comma-separated), through the orchestrators'
    /// SMTP server.
    #[arg(long, value_delimiter = ',', conflicts_with = "webhook")]
    email: Vec<String>,
    /// The webhook sink's secret, `@FILE` to read it from a file, or `-` for stdin. Left out:
    /// a new rule gets one made by Tasker (printed once), a saved one keeps its own.
    #[arg(long, requires = "webhook")]
    secret: Option<String>,
    /// How long after a firing notice another is held back (`15m` by default).
    #[arg(long)]
    suppress: Option<String>,
}

pub(super) async fn run(
    client: &Client,
    action: Option<AlertsCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(AlertsCommand::List) {
        AlertsCommand::List => {
            let alerts = client.alerts().await?;
            if json {
                return output::list(&alerts, None::<String>).map(|()| ExitCode::SUCCESS);
            }
            super::table::print(
                &[
                    "NAME",
                    "NAMESPACE",
                    "WHEN",
                    "STATE",
                    ">SEEN",
                    ">SENT",
                    ">FAILED",
                    "CHECKED",
                ],
                alerts.iter().map(|a| {
                    vec![
                        a.name.clone(),
                        a.namespace.clone(),
                        a.when.kind.as_str().to_owned(),
                        a.state.clone(),
                        a.observed.map_or_else(|| "-".into(), |n| n.to_string()),
                        a.sent.to_string(),
                        a.failed.to_string(),
                        a.checked_at
                            .map(super::clock::time)
                            .unwrap_or_else(|| "-".into()),
                    ]
                }),
            );
        }
        AlertsCommand::Show { name } => {
            let alert = client.alert(&name).await?;
            if json {
                output::one(&alert)?;
            } else {
                print(&alert);
            }
        }
        AlertsCommand::Set(set) => {
            let name = set.name.clone();
            let spec = spec(*set)?;
            let (alert, created) = client.put_alert(&name, &spec).await?;
            if json {
                output::one(&alert)?;
            } else {
                let how = if created { "created" } else { "updated" };
                out!("alert {} {how}", alert.name);
                print(&alert);
                if let Some(secret) = &alert.secret {
                    out!("secret      {secret}");
                    out!("            (shown this once: give it to the receiver now)");
                }
            }
        }
        AlertsCommand::Apply { files, prune } => {
            return super::alerts_file::apply(client, &files, prune, json).await;
        }
        AlertsCommand::Delete { name } => {
            client.delete_alert(&name).await?;
            if !json {
                out!("alert {name} removed");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn spec(set: SetAlert) -> anyhow::Result<PutAlert> {
    let kind = match set.when.as_str() {
        "failures" => AlertKind::Failures,
        "deadline_passed" => AlertKind::DeadlinePassed,
        "steps_waiting" => AlertKind::StepsWaiting,
        "schedule_skipped" => AlertKind::ScheduleSkipped,
        _ => AlertKind::DeadLetters,
    };
    let sink = match (set.webhook, set.slack) {
        (Some(url), _) => AlertSink::Webhook { url },
        (None, Some(url)) => AlertSink::Slack { url },
        (None, None) if !set.email.is_empty() => AlertSink::Email { to: set.email },
        (None, None) => anyhow::bail!("give --webhook URL, --slack URL or --email ADDRESS,…"),
    };
    Ok(PutAlert {
        namespace: set.namespace,
        when: AlertCondition {
            kind,
            template: set.template,
            schedule: set.schedule,
            count: set.count,
            within: set.within,
            longer_than: set.longer_than,
        },
        sink,
        secret: set.secret.map(|s| secret_arg(&s)).transpose()?,
        suppress: set.suppress,
    })
}

fn print(a: &Alert) {
    let w = &a.when;
    out!("namespace   {}", a.namespace);
    let filter = w
        .template
        .as_deref()
        .map(|t| format!(" of template {t}"))
        .or_else(|| w.schedule.as_deref().map(|s| format!(" of schedule {s}")))
        .unwrap_or_default();
    let span = match (w.kind, &w.within, &w.longer_than) {
        (AlertKind::StepsWaiting, _, l) => {
            format!("waiting longer than {}", l.as_deref().unwrap_or("5m"))
        }
        (_, within, _) => format!("within {}", within.as_deref().unwrap_or("5m")),
    };
    out!(
        "when        {} {}{filter} {span}",
        w.count.unwrap_or(1),
        w.kind.as_str()
    );
    out!("sink        {} {}", a.sink.kind(), a.sink.target());
    out!("suppress    {}s", a.suppress_seconds);
    out!(
        "state       {}{}",
        a.state,
        a.observed
            .map(|n| format!(" ({n} seen)"))
            .unwrap_or_default()
    );
    for (label, at) in [
        ("checked", a.checked_at),
        ("fired", a.fired_at),
        ("resolved", a.resolved_at),
    ] {
        if let Some(at) = at {
            out!("{label:<11} {}", super::clock::time(at));
        }
    }
    out!(
        "notices     {} sent, {} failed, {} suppressed",
        a.sent,
        a.failed,
        a.suppressed
    );
    if let Some(e) = &a.last_error {
        out!("last error  {e}");
    }
}
