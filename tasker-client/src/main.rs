//! `tasker`: submit, inspect, wait for and list tasks from the command line. The commands live
//! in `cli/`, one module per group: tasks, templates, dead letters.

use std::process::ExitCode;

use clap::Parser;

/// `println!` that ends the process quietly when stdout is closed (`tasker list | head`)
/// instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            panic!("writing to stdout: {e}");
        }
    }};
}

mod cli;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit_code(&e)
        }
    }
}

/// The exit code of a failed command, by class (`cli::EXIT_CODES`).
fn exit_code(e: &anyhow::Error) -> ExitCode {
    match e.downcast_ref::<tasker_client::Error>() {
        Some(tasker_client::Error::Api { status, .. }) if *status < 500 => ExitCode::from(4),
        Some(tasker_client::Error::Tls(_)) => ExitCode::from(2),
        Some(_) => ExitCode::from(5),
        None => ExitCode::from(2),
    }
}
