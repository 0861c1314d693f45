//! `tasker`: submit, inspect, wait for and list tasks from the command line. The commands live
//! in `cli/`, one module per group: tasks, templates, dead letters.

use std::process::ExitCode;

use clap::Parser;

/// `println!` through the pager when one runs (`cli::pager`), that ends the process quietly
/// when stdout is closed (`tasker list | head`) instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::pager::write_line(format_args!($($arg)*))
    };
}

mod cli;

fn main() -> ExitCode {
    // `templates validate|register` parse in a child of this program, killed at its budget.
    tasker_shared::template::child::serve_if_asked();
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("tasker: cannot start: {e}");
            ExitCode::from(5)
        }
    }
}

async fn run() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // A usage error under --json is JSON too; --help and --version print as they do.
        Err(e)
            if e.use_stderr()
                && asks_for_json(std::env::args_os().map(|a| a.to_string_lossy().into_owned())) =>
        {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            let message = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("{}", failure("usage", None, message, 2));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    let json = cli.json();
    let result = cli::run(cli).await;
    // The answer is whole: the pager (if one runs) shows its end and waits for the user.
    cli::pager::finish();
    match result {
        Ok(code) => code,
        Err(e) => {
            let code = exit_code(&e);
            if json {
                let (kind, status, message) = match e.downcast_ref::<tasker_client::Error>() {
                    Some(tasker_client::Error::Api {
                        status,
                        code,
                        message,
                    }) => (code.as_str(), Some(*status), message.clone()),
                    Some(tasker_client::Error::Http(_)) => ("unreachable", None, format!("{e:#}")),
                    Some(tasker_client::Error::Tls(_)) => ("tls", None, format!("{e:#}")),
                    Some(tasker_client::Error::Answer(_)) => ("answer", None, format!("{e:#}")),
                    None if e.is::<cli::Invalid>() => ("invalid_template", None, format!("{e:#}")),
                    None => ("local_input", None, format!("{e:#}")),
                };
                eprintln!("{}", failure(kind, status, &message, code));
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::from(code)
        }
    }
}

/// Whether the arguments ask for JSON (`--json`, `--output json|jsonl`), read before clap has
/// parsed them (a usage error is then JSON too).
fn asks_for_json(args: impl Iterator<Item = String>) -> bool {
    let mut previous = String::new();
    args.into_iter().any(|arg| {
        let json = arg == "--json"
            || arg.starts_with("--output=json")
            || (previous == "--output" && arg.starts_with("json"));
        previous = arg;
        json
    })
}

/// A failure as `--json` prints it: `{"error": {"code", "status"?, "message", "exit_code"}}`,
/// `code` the API's error code or one of `unreachable`, `tls`, `answer`, `local_input`, `usage`,
/// `invalid_template`.
fn failure(code: &str, status: Option<u16>, message: &str, exit_code: u8) -> serde_json::Value {
    let mut error = serde_json::json!({"code": code, "message": message, "exit_code": exit_code});
    if let Some(status) = status {
        error["status"] = status.into();
    }
    serde_json::json!({ "error": error })
}

/// The exit code of a failed command, by class (`cli::EXIT_CODES`).
fn exit_code(e: &anyhow::Error) -> u8 {
    if e.is::<cli::Invalid>() {
        return 1;
    }
    match e.downcast_ref::<tasker_client::Error>() {
        Some(tasker_client::Error::Api { status, .. }) if *status < 500 => 4,
        Some(tasker_client::Error::Tls(_)) => 2,
        Some(_) => 5,
        None => 2,
    }
}
