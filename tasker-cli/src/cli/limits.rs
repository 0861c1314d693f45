//! `tasker limits`: the concurrency keys and rate keys, and pausing or resuming a rate key.

use super::output;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use clap::Subcommand;

use tasker_client::Client;

#[derive(Debug, Subcommand)]
pub(super) enum LimitsCommand {
    /// List the concurrency keys (slots in use, steps waiting) and the rate keys.
    List {
        /// Only concurrency keys starting with this (`shop/charge:` for one template's).
        #[arg(long)]
        key: Option<String>,
    },
    /// Pause a rate key: no step claiming it starts before the pause ends (steps already
    /// started run on). Say until when with --until or --for.
    Pause {
        /// The rate key (its name, or the value its pointer read).
        key: String,
        /// When the pause ends (RFC 3339, e.g. 2026-12-01T02:30:00Z).
        #[arg(long, conflicts_with = "for", required_unless_present = "for")]
        until: Option<DateTime<Utc>>,
        /// How long the pause lasts from now (`30s`, `5m`, `1h`).
        #[arg(long = "for", value_name = "DURATION")]
        r#for: Option<String>,
        /// Why (shown with the key), e.g. "429 from the provider".
        #[arg(long)]
        note: Option<String>,
    },
    /// End a rate key's pause now.
    Resume {
        /// The rate key.
        key: String,
    },
}

pub(super) async fn run(
    client: &Client,
    action: Option<LimitsCommand>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match action.unwrap_or(LimitsCommand::List { key: None }) {
        LimitsCommand::List { key } => {
            let concurrency = client.concurrency_limits(key.as_deref()).await?;
            let rate = client.rate_limits().await?;
            if json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "concurrency": concurrency,
                        "rate": rate,
                    }))?
                );
                return Ok(ExitCode::SUCCESS);
            }
            super::table::print(
                &["CONCURRENCY KEY", ">IN USE", ">THROTTLED"],
                concurrency.iter().map(|c| {
                    vec![
                        c.key.clone(),
                        format!("{}/{}", c.in_use, c.limit),
                        c.throttled.to_string(),
                    ]
                }),
            );
            out!("");
            super::table::print(
                &["RATE KEY", ">RATE", ">BURST", ">THROTTLED", "PAUSED"],
                rate.iter().map(|r| {
                    vec![
                        r.key.clone(),
                        format!("{} per {}", r.limit, per(r.per_ms)),
                        r.burst.to_string(),
                        r.throttled.to_string(),
                        paused(r.paused_until, r.pause_note.as_deref()),
                    ]
                }),
            );
        }
        LimitsCommand::Pause {
            key,
            until,
            r#for,
            note,
        } => {
            let until = match (until, r#for) {
                (Some(t), _) => t,
                (None, Some(d)) => {
                    let d = tasker_shared::time::parse_duration("--for", &d)?;
                    Utc::now() + chrono::Duration::from_std(d)?
                }
                (None, None) => anyhow::bail!("say until when: --until TIME or --for DURATION"),
            };
            let r = client
                .pause_rate_limit(&key, until, note.as_deref())
                .await?;
            print_one(&r, json)?;
        }
        LimitsCommand::Resume { key } => {
            let r = client.resume_rate_limit(&key).await?;
            print_one(&r, json)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_one(r: &tasker_client::RateLimit, json: bool) -> anyhow::Result<()> {
    if json {
        output::one(r)?;
    } else {
        out!(
            "{}: {} per {}, burst {}; {}",
            r.key,
            r.limit,
            per(r.per_ms),
            r.burst,
            paused(r.paused_until, r.pause_note.as_deref())
        );
    }
    Ok(())
}

/// A period as users write it (`1s`, `1m 30s`).
fn per(ms: i64) -> String {
    if ms % 1000 == 0 {
        tasker_shared::time::format_duration(std::time::Duration::from_millis(ms.max(0) as u64))
    } else {
        format!("{ms}ms")
    }
}

fn paused(until: Option<DateTime<Utc>>, note: Option<&str>) -> String {
    match until {
        Some(t) if t > Utc::now() => format!(
            "paused until {}{}",
            super::clock::time(t),
            note.map(|n| format!(" ({n})")).unwrap_or_default()
        ),
        _ => "not paused".into(),
    }
}
