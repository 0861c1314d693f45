//! `tasker submit --from FILE` (many tasks from JSON lines, sent in bulk requests) and
//! `tasker purge` (finished tasks, now).

use super::output;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::{Value, json};

use tasker_client::{BatchStatus, Client, CreateTask, PurgeRequest, Purged};

/// Tasks per bulk request: well under the server's default limit, so a request stays small.
pub(super) const CHUNK: usize = 5_000;

/// Reads one task per line from `from` (`-`: stdin): each a JSON object as `POST /v1/tasks`
/// takes it; `namespace` and `name` default to those given on the command line. Blank lines
/// are skipped. Every line is checked before anything is sent: one that is not a task stops
/// the command (exit 2) with its line number, and nothing is created.
pub(super) fn read_lines(
    from: &str,
    namespace: Option<&str>,
    name: Option<&str>,
) -> anyhow::Result<Vec<(usize, CreateTask)>> {
    let text = if from == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else {
        std::fs::read_to_string(from).with_context(|| format!("reading {from}"))?
    };
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let mut value: Value = serde_json::from_str(line)
            .with_context(|| format!("{from}:{line_no}: not valid JSON"))?;
        let Some(object) = value.as_object_mut() else {
            anyhow::bail!("{from}:{line_no}: each line must be a JSON object (a task)");
        };
        for (field, given) in [("namespace", namespace), ("name", name)] {
            if let Some(given) = given {
                object
                    .entry(field)
                    .or_insert_with(|| Value::String(given.to_owned()));
            }
        }
        let task: CreateTask = serde_json::from_value(value)
            .with_context(|| format!("{from}:{line_no}: not a task"))?;
        tasks.push((line_no, task));
    }
    if tasks.is_empty() {
        anyhow::bail!("{from}: no task in it");
    }
    Ok(tasks)
}

/// Sends `tasks` in bulk requests of [`CHUNK`] and prints what happened to each line: a
/// summary and the refused lines (exit 4 if any was refused), or with `json` one document
/// `{created, existing, refused, results: [{line, status, task_id?, error?}]}`.
pub(super) async fn submit(
    client: &Client,
    tasks: Vec<(usize, CreateTask)>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut results = Vec::with_capacity(tasks.len());
    for chunk in tasks.chunks(CHUNK) {
        let items: Vec<CreateTask> = chunk.iter().map(|(_, t)| t.clone()).collect();
        let done = client.create_tasks(&items).await?;
        for r in done.results {
            results.push((chunk[r.index].0, r));
        }
    }
    let count = |s: BatchStatus| results.iter().filter(|(_, r)| r.status == s).count();
    let (created, existing, refused) = (
        count(BatchStatus::Created),
        count(BatchStatus::Existing),
        count(BatchStatus::Refused),
    );
    if json {
        let lines: Vec<Value> = results
            .iter()
            .map(|(line, r)| {
                let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
                v["line"] = json!(line);
                if let Some(o) = v.as_object_mut() {
                    o.remove("index");
                }
                v
            })
            .collect();
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "created": created, "existing": existing, "refused": refused, "results": lines,
            }))?
        );
    } else {
        out!("created {created}, existing {existing}, refused {refused}");
        for (line, r) in &results {
            if let Some(e) = &r.error {
                out!("line {line}: {}: {}", e.code, e.message);
            }
        }
    }
    Ok(if refused > 0 {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints the retention policy and when a task was last purged.
pub(super) async fn retention(client: &Client, json: bool) -> anyhow::Result<ExitCode> {
    let p = client.retention().await?;
    if json {
        output::one(&p)?;
        return Ok(ExitCode::SUCCESS);
    }
    let kept = |d: &str| {
        if d == "never" {
            "kept forever".to_owned()
        } else {
            format!("kept {d}")
        }
    };
    out!("complete    {}", kept(&p.complete));
    out!("error       {}", kept(&p.error));
    out!("cancelled   {}", kept(&p.cancelled));
    out!(
        "tombstones  {} (a purged id answers 410 task_purged)",
        kept(&p.tombstones)
    );
    if !p.audit.is_empty() {
        out!("audit log   {} (docs/auth.md)", kept(&p.audit));
    }
    out!(
        "pace        {} tasks a batch, at most {}% of the time, looking every {} s",
        p.batch,
        p.busy_percent,
        p.interval_ms / 1000
    );
    match p.last_purged_at {
        Some(at) => out!("last purge  {}", super::clock::time(at)),
        None => out!("last purge  none remembered"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Purges finished tasks, one request after another while the server says there are more
/// (a dry run asks once), and prints the totals.
pub(super) async fn purge(
    client: &Client,
    mut req: PurgeRequest,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut total: Option<Purged> = None;
    loop {
        let done = client.purge(&req).await?;
        let more = done.more && !req.dry_run;
        total = Some(match total.take() {
            None => done,
            Some(mut t) => {
                t.tasks += done.tasks;
                for (k, n) in done.by_state {
                    *t.by_state.entry(k).or_default() += n;
                }
                t.rows = Some(t.rows.unwrap_or(0) + done.rows.unwrap_or(0));
                t.bytes = Some(t.bytes.unwrap_or(0) + done.bytes.unwrap_or(0));
                t.more = done.more;
                t
            }
        });
        if !more {
            break;
        }
        req.limit = req.limit.or(Some(10_000));
    }
    let Some(t) = total else {
        return Ok(ExitCode::SUCCESS);
    };
    if json {
        output::one(&t)?;
        return Ok(ExitCode::SUCCESS);
    }
    let states: Vec<String> = t.by_state.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let states = if states.is_empty() {
        String::new()
    } else {
        format!(" ({})", states.join(", "))
    };
    let before = super::clock::time(t.before);
    if t.dry_run {
        out!(
            "would purge {}{} tasks{states} finished before {before}",
            t.tasks,
            if t.more { "+" } else { "" }
        );
    } else {
        out!(
            "purged {} tasks{states} finished before {before}: {} rows, {} bytes",
            t.tasks,
            t.rows.unwrap_or(0),
            t.bytes.unwrap_or(0)
        );
    }
    Ok(ExitCode::SUCCESS)
}
