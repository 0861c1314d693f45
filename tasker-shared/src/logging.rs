//! Logging set-up for every Tasker binary, in one place: `RUST_LOG` (or `default` when unset)
//! filters; lines go to stderr, as text (coloured only on a terminal without `NO_COLOR`) or, with
//! `TASKER_LOG_FORMAT=json`, one JSON object a line for a log collector. (A worker embedded in
//! Ruby, Python or Node hands its records to the host's logger instead:
//! `tasker_worker::forward_logs`.)

use std::io::IsTerminal;

/// The variable that chooses the format: `text` (the default) or `json`.
pub const FORMAT_VARIABLE: &str = "TASKER_LOG_FORMAT";

/// The filter used when `RUST_LOG` is unset: `base` (say `info`) for everything, except the
/// broker client's own "Channel closed" lines. The broker answers an expected refusal (a
/// passive check of a queue not declared yet, a declare a worker's user may not make) by closing
/// the channel, which that client logs as an error; Tasker reports every close that matters in
/// its own words (a consumer ended, a connection lost, a queue missing).
pub fn default_filter(base: &str) -> String {
    format!("{base},lapin::channel=off")
}

/// Installs the process's log subscriber. Idempotent: if one is installed already (a second
/// worker in the same Python, Ruby or Node process, or a host library's), that one is kept.
pub fn init(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter(default)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let json = std::env::var(FORMAT_VARIABLE).is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = if json {
        // `{"timestamp", "level", "target", "message", …fields}`: the event's fields at the top.
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init()
    } else {
        let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        builder.with_ansi(ansi).try_init()
    };
}
