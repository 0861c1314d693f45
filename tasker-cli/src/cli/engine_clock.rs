//! `tasker clock [advance BY | skip]`: the engine's clock; in test mode
//! (`tasker-orchestrator test-env`, docs/testing.md) moving it.

use std::process::ExitCode;

use tasker_client::{Client, Clock};

use super::clock::{maybe, time};

/// `tasker clock`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ClockArgs {
    #[command(subcommand)]
    action: Option<ClockAction>,
}

#[derive(Debug, clap::Subcommand)]
enum ClockAction {
    /// Test mode (admin): move the clock forward by BY (`7d`, `90s`, `1h30m`); every timer
    /// then due has rung when it answers.
    Advance {
        /// How far.
        by: String,
    },
    /// Test mode (admin): move the clock to its next timer, if no step is with a worker.
    Skip,
}

pub async fn run(client: &Client, a: ClockArgs, json: bool) -> anyhow::Result<ExitCode> {
    let clock = match a.action {
        None => client.clock().await?,
        Some(ClockAction::Advance { by }) => client.advance_clock(&by).await?,
        Some(ClockAction::Skip) => {
            let skipped = client.skip_clock().await?;
            if !json && !skipped.skipped {
                eprintln!("not skipped: a step is with a worker, or no timer is ahead");
            }
            skipped.clock
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&clock)?);
    } else {
        print(&clock);
    }
    Ok(ExitCode::SUCCESS)
}

fn print(c: &Clock) {
    let ahead = chrono::Duration::milliseconds(c.skew_ms)
        .to_std()
        .map(tasker_shared::time::format_duration)
        .unwrap_or_default();
    let mode = match (c.test_clock, c.skew_ms) {
        (false, _) => "the wall clock".to_owned(),
        (true, 0) => "test mode, on the wall clock".to_owned(),
        (true, _) => format!("test mode, {ahead} ahead of the wall clock"),
    };
    println!("now         {} ({mode})", time(c.now));
    println!("next timer  {}", maybe(c.next_timer));
    println!(
        "busy        {}",
        if c.busy {
            "a step is with a worker"
        } else {
            "no"
        }
    );
}
