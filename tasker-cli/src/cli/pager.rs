//! A pager for the commands whose answers run long (`show`, `history`, the lists): on a terminal,
//! what they print goes through `TASKER_PAGER`, else `PAGER`, else `less` (with `LESS=FRX` when
//! unset: it quits at once when the answer fits a screen and keeps colours), as git does. Not in
//! a pipe or a file, not for JSON, not with `--no-pager` or an empty or `cat` pager. Everything
//! `out!` prints goes through [`write_line`].

use std::io::{IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The running pager and the pipe to it, once started.
static PAGER: Mutex<Option<(Child, ChildStdin)>> = Mutex::new(None);

/// The pager command to run, if any: `None` when stdout is no terminal or the user said none.
fn command(no_pager: bool) -> Option<String> {
    if no_pager || !std::io::stdout().is_terminal() {
        return None;
    }
    let chosen = std::env::var("TASKER_PAGER")
        .or_else(|_| std::env::var("PAGER"))
        .unwrap_or_else(|_| "less".into());
    let chosen = chosen.trim();
    (!chosen.is_empty() && chosen != "cat").then(|| chosen.to_owned())
}

/// Starts the pager for this command's answer when stdout is a terminal (see the module). A
/// pager that cannot start leaves the answer on stdout.
pub(super) fn start(no_pager: bool) {
    let Some(cmd) = command(no_pager) else { return };
    let mut shell = Command::new("sh");
    shell.args(["-c", &cmd]).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        shell.env("LESS", "FRX");
    }
    if let Ok(mut child) = shell.spawn()
        && let Some(stdin) = child.stdin.take()
    {
        *PAGER.lock().unwrap_or_else(|e| e.into_inner()) = Some((child, stdin));
    }
}

/// Writes one line of the answer: to the pager when one runs, else to stdout. A reader gone
/// (the pager quit, `tasker list | head` closed the pipe) ends the process quietly.
pub fn write_line(line: std::fmt::Arguments<'_>) {
    let mut pager = PAGER.lock().unwrap_or_else(|e| e.into_inner());
    let written = match pager.as_mut() {
        Some((_, stdin)) => writeln!(stdin, "{line}"),
        None => writeln!(std::io::stdout().lock(), "{line}"),
    };
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            drop(pager);
            finish();
            std::process::exit(0);
        }
        panic!("writing the answer: {e}");
    }
}

/// Closes the pipe to the pager and waits for the user to leave it (at the command's end).
pub fn finish() {
    let taken = PAGER.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((mut child, stdin)) = taken {
        drop(stdin);
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pager_outside_a_terminal_or_when_refused() {
        // Under `cargo test` stdout is captured: never a terminal.
        assert_eq!(command(false), None);
        assert_eq!(command(true), None);
    }
}
