//! Parsing template, schedule and alert-file texts in a child process that is killed when its budget ends,
//! so that a text whose parse would cost more than the budget costs no CPU after the refusal.
//!
//! The pre-scan ([`super::bounds`]) already refuses what makes the YAML parser slow; this is
//! the second guard, for whatever the scan did not foresee. A thread cannot be stopped in the
//! middle of libyaml's work, a process can: a program that calls [`serve_if_asked`] first in
//! `main` (`tasker-orchestrator`, `tasker`, and Rust workers through `tasker_worker::run`)
//! re-executes itself with a hidden first argument, hands the texts to that child on stdin,
//! reads one answer per text on stdout, and kills the child once one text has taken longer
//! than its budget. A program that never called it (Python, Ruby and Node workers, whose
//! process is the interpreter; tests that embed an orchestrator) parses in its own process,
//! bounded by the pre-scan only.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{AlertsFile, Error, ErrorKind, Loaded, TaskTemplate};
use crate::time::ScheduleSpec;

/// How long one template or schedule may take to parse and check, by default.
pub const PARSE_BUDGET: Duration = Duration::from_secs(2);

/// The hidden first argument that makes a Tasker program a parsing child.
pub const CHILD_ARG: &str = "__tasker-parse";

/// This program, when it answers [`CHILD_ARG`].
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// To call first in `main`: when this process was started as a parsing child, parses what
/// stdin holds, answers on stdout and exits; otherwise notes that this program can run one,
/// so that parsing from now on happens in a child killed at its budget.
pub fn serve_if_asked() {
    if std::env::args_os().nth(1).is_some_and(|a| a == CHILD_ARG) {
        std::process::exit(match answer() {
            Ok(()) => 0,
            Err(_) => 1,
        });
    }
    // /proc/self/exe still runs this program after its file was replaced by an upgrade.
    let me = PathBuf::from("/proc/self/exe");
    let program = if me.exists() {
        Some(me)
    } else {
        std::env::current_exe().ok()
    };
    if let Some(program) = program {
        let _ = PROGRAM.set(program);
    }
}

/// Whether parsing happens in a child process (this program called [`serve_if_asked`]): a
/// parse past its budget is then stopped before the call returns.
pub fn isolated() -> bool {
    PROGRAM.get().is_some()
}

/// What a text holds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Template,
    Schedule,
    Alerts,
}

#[derive(Debug, Serialize, Deserialize)]
struct Text {
    kind: Kind,
    label: String,
    text: String,
}

/// One text's answer, as the child writes it (one JSON line each).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Template(Box<TaskTemplate>),
    Schedule(Box<ScheduleSpec>),
    Alerts(Box<AlertsFile>),
    Error(Error),
}

/// The child's side: every text on stdin, one answer line per text on stdout, as it goes.
fn answer() -> std::io::Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let texts: Vec<Text> = serde_json::from_str(&input).map_err(std::io::Error::other)?;
    let mut out = std::io::stdout().lock();
    for t in texts {
        let answer = match t.kind {
            Kind::Template => TaskTemplate::load(&t.text, &t.label)
                .map_or_else(Answer::Error, |l| Answer::Template(Box::new(l.template))),
            Kind::Schedule => super::parse_schedule(&t.text, &t.label)
                .map_or_else(Answer::Error, |s| Answer::Schedule(Box::new(s))),
            Kind::Alerts => super::parse_alerts(&t.text, &t.label)
                .map_or_else(Answer::Error, |a| Answer::Alerts(Box::new(a))),
        };
        serde_json::to_writer(&mut out, &answer).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}

/// Loads (parses, checks and compiles) one template text within `budget`.
pub fn load_template(text: &str, label: &str, budget: Duration) -> Result<Loaded, Error> {
    load_templates(vec![(label.to_owned(), text.to_owned())], budget)
        .pop()
        .unwrap_or_else(|| Err(Error::of_file(label, ErrorKind::Empty)))
}

/// Loads each `(label, text)` template, each within `budget`; an answer per text, in order.
pub fn load_templates(
    texts: Vec<(String, String)>,
    budget: Duration,
) -> Vec<Result<Loaded, Error>> {
    run(
        Kind::Template,
        texts,
        budget,
        TaskTemplate::precheck,
        TaskTemplate::load,
        |answer, label| match answer {
            // Compiled again here (the graph and schema do not cross processes); the child
            // already ran the same checks on the same definition within the budget.
            Answer::Template(template) => template.validate(label),
            Answer::Error(e) => Err(e),
            _ => Err(failed(label, "answered something else than a template")),
        },
    )
}

/// Parses and checks each `(label, text)` schedule, each within `budget`.
pub fn parse_schedules(
    texts: Vec<(String, String)>,
    budget: Duration,
) -> Vec<Result<ScheduleSpec, Error>> {
    run(
        Kind::Schedule,
        texts,
        budget,
        super::precheck_schedule,
        super::parse_schedule,
        |answer, label| match answer {
            Answer::Schedule(spec) => Ok(*spec),
            Answer::Error(e) => Err(e),
            _ => Err(failed(label, "answered something else than a schedule")),
        },
    )
}

/// Parses and checks each `(label, text)` alert file, each within `budget`.
pub fn parse_alerts(
    texts: Vec<(String, String)>,
    budget: Duration,
) -> Vec<Result<AlertsFile, Error>> {
    run(
        Kind::Alerts,
        texts,
        budget,
        super::precheck_alerts,
        super::parse_alerts,
        |answer, label| match answer {
            Answer::Alerts(file) => Ok(*file),
            Answer::Error(e) => Err(e),
            _ => Err(failed(label, "answered something else than an alert file")),
        },
    )
}

type Check = fn(&str, &str) -> Result<(), Error>;

/// Each text checked here first (`precheck`: linear, no parser), then parsed in a child
/// (`there` reads its answer), or here (`here`) when this program cannot run one.
fn run<T>(
    kind: Kind,
    texts: Vec<(String, String)>,
    budget: Duration,
    precheck: Check,
    here: fn(&str, &str) -> Result<T, Error>,
    there: fn(Answer, &str) -> Result<T, Error>,
) -> Vec<Result<T, Error>> {
    let mut out: Vec<Option<Result<T, Error>>> = Vec::with_capacity(texts.len());
    let mut pending = Vec::new();
    for (i, (label, text)) in texts.into_iter().enumerate() {
        match precheck(&text, &label) {
            Err(e) => out.push(Some(Err(e))),
            Ok(()) => {
                out.push(None);
                pending.push((i, Text { kind, label, text }));
            }
        }
    }
    let Some(program) = PROGRAM.get() else {
        for (i, t) in pending {
            out[i] = Some(here(&t.text, &t.label));
        }
        return out.into_iter().flatten().collect();
    };
    let (places, texts): (Vec<usize>, Vec<Text>) = pending.into_iter().unzip();
    for ((i, answer), t) in places
        .into_iter()
        .zip(in_child(program, &texts, budget))
        .zip(&texts)
    {
        out[i] = Some(answer.and_then(|a| there(a, &t.label)));
    }
    out.into_iter().flatten().collect()
}

fn failed(label: &str, why: impl std::fmt::Display) -> Error {
    Error::of_file(label, ErrorKind::ParserFailed(why.to_string()))
}

/// Runs a child of `program` on `texts`: an answer per text, each within `budget` from the
/// previous one. The child is killed (and reaped) before this returns, whatever happened.
fn in_child(program: &PathBuf, texts: &[Text], budget: Duration) -> Vec<Result<Answer, Error>> {
    if texts.is_empty() {
        return Vec::new();
    }
    let label = |i: usize| texts.get(i).map_or("<texts>", |t| t.label.as_str());
    let input = match serde_json::to_vec(texts) {
        Ok(input) => input,
        Err(e) => return vec![Err(failed(label(0), e))],
    };
    let spawned = Command::new(program)
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            let why = format!("could not start the parser ({}): {e}", program.display());
            return texts.iter().map(|t| Err(failed(&t.label, &why))).collect();
        }
    };
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            // A child killed early closes the pipe: nothing more to say.
            let _ = stdin.write_all(&input);
        }
    });
    let (lines, answers) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        if let Some(stdout) = stdout {
            for line in BufReader::new(stdout).lines() {
                if lines.send(line).is_err() {
                    break;
                }
            }
        }
    });
    let mut out = Vec::with_capacity(texts.len());
    for (i, t) in texts.iter().enumerate() {
        match answers.recv_timeout(budget) {
            Ok(Ok(line)) => out.push(
                serde_json::from_str::<Answer>(&line)
                    .map_err(|e| failed(&t.label, format!("unreadable answer: {e}"))),
            ),
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                out.push(Err(Error::of_file(
                    label(i),
                    ErrorKind::TooSlow(budget.as_millis() as u64),
                )));
                break;
            }
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                out.push(Err(failed(
                    &t.label,
                    format!("the parser stopped ({status})"),
                )));
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
    let _ = reader.join();
    // Texts after one that failed to answer are not read.
    let stopped = out.len();
    out.extend(texts[stopped..].iter().map(|t| {
        Err(failed(
            &t.label,
            format!("not read: the parser stopped at {}", label(stopped - 1)),
        ))
    }));
    out
}
