//! `tasker dead-letters`: list, show, replay and discard dead letters.

use super::output;
use std::process::ExitCode;

use clap::Subcommand;

use tasker_client::Client;

use super::pages::{self, Listed};

#[derive(Debug, Subcommand)]
pub(super) enum DeadLettersCommand {
    /// Newest first, a page at a time (`--all`: every page).
    List {
        /// Dead letters per page (1 to 500).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Start after this id (the `next` a previous page printed).
        #[arg(long)]
        before: Option<i64>,
        /// Every page, not just the first.
        #[arg(long)]
        all: bool,
    },
    /// One dead letter: its reason, origin, headers and body.
    Show {
        /// The dead letter's id.
        id: i64,
    },
    /// Publish it again, as it was, to the queue it came from (and remove it). A message that
    /// fails again comes back as a dead letter.
    Replay {
        /// The dead letter's id.
        id: i64,
    },
    /// Remove it for good.
    Discard {
        /// The dead letter's id.
        id: i64,
    },
}

pub(super) async fn run(
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
            list(client, limit, before, all, json).await
        }
        DeadLettersCommand::Show { id } => show(client, id, json).await,
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

/// Newest first, a page at a time; with `all`, every page.
async fn list(
    client: &Client,
    limit: i64,
    before: Option<i64>,
    all: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let fetch = |before| async move {
        let page = client.dead_letters(before, Some(limit)).await?;
        anyhow::Ok((page.dead_letters, page.next_before))
    };
    let every = match pages::read(before, all, json, "tasker dead-letters list", fetch).await? {
        Listed::Printed => return Ok(ExitCode::SUCCESS),
        Listed::Rows(rows) => rows,
    };
    super::table::print(
        &[">ID", "FIRST SEEN", ">SEEN", "QUEUE", "REASON"],
        every.iter().map(|d| {
            vec![
                d.id.to_string(),
                super::clock::time(d.first_seen),
                d.times_seen.to_string(),
                d.queue.clone().unwrap_or_else(|| "?".into()),
                d.reason.clone(),
            ]
        }),
    );
    Ok(ExitCode::SUCCESS)
}

/// One dead letter: its reason, origin, headers and body.
async fn show(client: &Client, id: i64, json: bool) -> anyhow::Result<ExitCode> {
    let d = client.dead_letter(id).await?;
    if json {
        output::one(&d)?;
        return Ok(ExitCode::SUCCESS);
    }
    let i = &d.info;
    out!("dead letter {}", i.id);
    out!("queue       {}", i.queue.as_deref().unwrap_or("unknown"));
    out!("reason      {}", i.reason);
    out!(
        "sender      {}",
        i.sender
            .as_deref()
            .unwrap_or("none (replaying it could move nothing)")
    );
    if let Some(namespaces) = &i.namespaces {
        out!("namespaces  {}", namespaces.join(", "));
    }
    if let (Some(task), Some(step)) = (i.task_id, i.step_id) {
        out!("task        {task} (step {step})");
    }
    out!(
        "seen        {} time(s), first {}, last {}",
        i.times_seen,
        super::clock::time(i.first_seen),
        super::clock::time(i.last_seen)
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
