//! `tasker replay TASK STEP [--attempt N] [--save FILE] [-- COMMAND…]`: one attempt of a step as
//! its handler received it, fetched from the API and handed to a local handler
//! (docs/testing.md#replaying-a-failed-step).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use tasker_client::Client;
use uuid::Uuid;

/// The environment variable naming the file of inputs a replaying command reads.
pub const REPLAY_VAR: &str = "TASKER_REPLAY";

/// `tasker replay`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The task's id.
    id: Uuid,
    /// The step (name or id).
    step: String,
    /// The attempt (from 1; the latest unless given).
    #[arg(long)]
    attempt: Option<u32>,
    /// Write the inputs to this file (and keep it).
    #[arg(long)]
    save: Option<PathBuf>,
    /// The command that runs the handler, after `--`.
    #[arg(last = true)]
    command: Vec<String>,
}

pub async fn run(client: &Client, a: ReplayArgs, json: bool) -> anyhow::Result<ExitCode> {
    let inputs = client.step_inputs(a.id, &a.step, a.attempt).await?;
    let text = serde_json::to_string_pretty(&inputs)?;
    let Some((program, args)) = a.command.split_first() else {
        if let Some(path) = &a.save {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("saved to {}", path.display());
        } else if json {
            println!("{text}");
        } else {
            print_summary(&inputs, &text, a.id, &a.step);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let path = a.save.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("tasker-replay-{}-{}.json", a.id, inputs.step_id))
    });
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    // The command inherits the terminal: a debugger it starts (pdb, byebug, node inspect) works.
    let status = std::process::Command::new(program)
        .args(args)
        .env(REPLAY_VAR, &path)
        .status()
        .with_context(|| format!("starting {program}"))?;
    if a.save.is_none() {
        let _ = std::fs::remove_file(&path);
    }
    Ok(ExitCode::from(
        status.code().map_or(1, |c| c.clamp(0, 255) as u8),
    ))
}

fn print_summary(i: &tasker_client::StepInputs, text: &str, id: Uuid, step: &str) {
    println!(
        "step {} of task {} — handler {}, attempt {} of {} ({}; latest attempt {})",
        i.step_name, i.task_id, i.handler, i.attempt, i.max_attempts, i.state, i.latest_attempt
    );
    if let Some(error) = &i.error {
        let kind = error["kind"].as_str().unwrap_or("?");
        let message = error["message"].as_str().unwrap_or_default();
        println!("latest error: {kind}: {message}");
    }
    println!("{text}");
    println!(
        "\nrun it with your handler: tasker replay {id} {step} -- python -m tasker.testing --handlers handlers.py"
    );
    println!("(docs/testing.md: replaying a failed step)");
}
