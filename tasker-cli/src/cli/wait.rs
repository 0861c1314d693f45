//! Waiting for a task from the command line (`submit --wait`, `wait`, `retry --wait`,
//! `resolve --wait`): the task's id is said before the wait starts, its progress is shown while
//! stderr is a terminal, and Ctrl-C ends the wait, never the task, saying how to follow it.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use uuid::Uuid;

use tasker_client::{Client, Task};

/// Exit code of a wait ended by Ctrl-C (128 + SIGINT, as shells report it).
const INTERRUPTED: u8 = 130;

/// Waits up to `secs` for task `id`: the task then, or `None` if Ctrl-C ended the wait (the task
/// goes on; what to say was said). `announce`: say first, on stderr, which task is waited for
/// (a task just created, whose id the user has not seen yet; not under `--json`).
pub(super) async fn wait(
    client: &Client,
    id: Uuid,
    secs: f64,
    announce: bool,
    json: bool,
) -> anyhow::Result<Option<Task>> {
    let timeout = Duration::try_from_secs_f64(secs.max(0.0))
        .context("--wait / --timeout must be a number of seconds")?;
    if announce && !json {
        eprintln!("task {id}: waiting up to {secs} s for it (Ctrl-C stops waiting, not the task)");
    }
    let progress = (!json && std::io::stderr().is_terminal())
        .then(|| tokio::spawn(show_progress(client.clone(), id)));
    let waited = tokio::select! {
        waited = client.wait(id, timeout) => Some(waited),
        _ = tokio::signal::ctrl_c() => None,
    };
    if let Some(p) = progress {
        p.abort();
        eprint!("\r\x1b[2K");
    }
    match waited {
        Some(task) => Ok(Some(task.with_context(|| {
            format!("waiting for task {id} (it goes on: `tasker wait {id}` follows it)")
        })?)),
        None => {
            interrupted(id, json);
            Ok(None)
        }
    }
}

/// The exit code of an interrupted wait.
pub(super) fn interrupted_code() -> ExitCode {
    ExitCode::from(INTERRUPTED)
}

/// Says, after Ctrl-C, that the task goes on and how to follow it (under `--json`, as the
/// JSON error every failure prints on stderr).
fn interrupted(id: Uuid, json: bool) {
    let message = format!(
        "stopped waiting; task {id} goes on. Follow it with `tasker wait {id}` (or `tasker show {id}`)"
    );
    if json {
        let error = serde_json::json!({"error": {
            "code": "interrupted", "message": message, "task_id": id, "exit_code": INTERRUPTED,
        }});
        eprintln!("{error}");
    } else {
        eprintln!("{message}");
    }
}

/// Rewrites one stderr line, `task ID: running, 3/7 steps done`, at each change of the task.
async fn show_progress(client: Client, id: Uuid) {
    let mut events = client.follow(id);
    while let Ok(snapshot) = events.next().await {
        let (done, total) = snapshot.progress();
        let more = if snapshot.more_steps { "+" } else { "" };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2Ktask {id}: {}, {done}/{total}{more} steps done",
            snapshot.state
        );
        let _ = err.flush();
    }
}
