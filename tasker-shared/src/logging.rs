//! Logging set-up for every Tasker process and binding, in one place: `RUST_LOG` (or `default`
//! when unset) filters; lines go to stderr, coloured only on a terminal without `NO_COLOR`.

use std::io::IsTerminal;

/// Installs the process's log subscriber. Idempotent: if one is installed already (a second
/// worker in the same Python, Ruby or Node process, or a host library's), that one is kept.
pub fn init(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}
