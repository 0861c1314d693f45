//! The task commands' work and output: list, show, wait, cancel, retry, history.

use serde_json::Value;
use std::process::ExitCode;
use uuid::Uuid;

use tasker_client::{Client, RepairNote, Step, Task, TaskQuery, Transition};

use super::{output, table};

/// `tasker show`: a task and its steps.
pub(super) async fn show(client: &Client, id: Uuid, json: bool) -> anyhow::Result<ExitCode> {
    let task = client.task(id, None).await?;
    let mut steps = client.steps(id).await?;
    // In graph order when the template can be read (else as the API lists them).
    if let Ok(t) = client
        .template(&task.namespace, &task.name, Some(&task.version))
        .await
        && let Ok(template) = serde_json::from_value::<tasker_shared::TaskTemplate>(t.definition)
    {
        super::order::graph_order(&template, &mut steps);
    }
    print_task_and_steps(&task, &steps, json)?;
    Ok(ExitCode::SUCCESS)
}

/// `tasker cancel`.
pub(super) async fn cancel(client: &Client, id: Uuid, json: bool) -> anyhow::Result<ExitCode> {
    print_task(&client.cancel(id).await?, json)?;
    Ok(ExitCode::SUCCESS)
}

/// `tasker retry`: the task, or one of its steps, then maybe a wait.
pub(super) async fn retry(
    client: &Client,
    id: Uuid,
    step: Option<String>,
    note: RepairNote,
    wait: Option<f64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let task = match step {
        None => client.retry(id, &note).await?,
        Some(step) => client.retry_step(id, &step, &note).await?,
    };
    show_or_finish(client, &task, wait, json).await
}

/// `tasker history`.
pub(super) async fn history(client: &Client, id: Uuid, json: bool) -> anyhow::Result<ExitCode> {
    print_history(&client.history(id).await?, json)?;
    Ok(ExitCode::SUCCESS)
}

/// Lists tasks a page at a time; with `all`, every page. `--output json`: one page as
/// `{"items": [...], "next": <id for --before>}` (with `all` every task and `next` null);
/// `jsonl`: a task a line.
pub(super) async fn list(
    client: &Client,
    mut q: TaskQuery,
    all: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut every = Vec::new();
    let mut more = None;
    loop {
        let page = client.tasks(&q).await?;
        every.extend(page.tasks);
        match page.next_before {
            Some(n) if all => q.before = Some(n),
            Some(n) => {
                eprintln!("more: tasker list --before {n} (or --all)");
                more = Some(n);
                break;
            }
            None => break,
        }
    }
    if json {
        output::list(&every, more)?;
    } else {
        table::print(
            &["ID", "STATE", "TEMPLATE", ">MS"],
            every.into_iter().map(|t| {
                vec![
                    t.id.to_string(),
                    t.state,
                    format!("{}/{}@{}", t.namespace, t.name, t.version),
                    t.duration_ms.map(|d| format!("{d:.1}")).unwrap_or_default(),
                ]
            }),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The live workers (with `all`, also those gone in the last day): one line each with what it
/// serves.
pub(super) async fn workers(client: &Client, all: bool, json: bool) -> anyhow::Result<ExitCode> {
    let workers = client.workers(all).await?;
    if json {
        output::list(&workers, None::<()>)?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = chrono::Utc::now();
    table::print(
        &[
            "NAME",
            "LANGUAGE",
            "LIVE",
            ">CONC",
            "LAST SEEN",
            "NAMESPACES",
            "HANDLERS",
        ],
        workers.iter().map(|w| {
            let seen = (now - w.last_seen_at).num_milliseconds() as f64 / 1000.0;
            vec![
                w.name.clone(),
                w.language.clone(),
                if w.live { "yes" } else { "no" }.to_owned(),
                w.concurrency.to_string(),
                format!("{seen:.1} s ago"),
                w.namespaces.join(","),
                w.handlers.join(","),
            ]
        }),
    );
    if workers.is_empty() {
        eprintln!(
            "no live worker{}",
            if all {
                " seen in the last day"
            } else {
                " (--all: also those gone)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints `task`, or with `wait` waits for it to finish ([`finish`]).
pub(super) async fn show_or_finish(
    client: &Client,
    task: &Task,
    wait: Option<f64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match wait {
        None => {
            print_task(task, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(secs) => finish(client, task.id, secs, true, json).await,
    }
}

fn print_history(history: &[Transition], json: bool) -> anyhow::Result<()> {
    if json {
        output::list(history, None::<()>)?;
        return Ok(());
    }
    table::print(
        &["AT", "STEP", "TRANSITION", ">ATTEMPT", "BY", "REASON"],
        history.iter().map(|h| {
            vec![
                super::clock::time(h.at),
                h.step.as_deref().unwrap_or("(task)").to_owned(),
                format!("{} -> {}", h.from.as_deref().unwrap_or("-"), h.to),
                h.attempt.map(|a| a.to_string()).unwrap_or_default(),
                h.by.as_deref().unwrap_or("-").to_owned(),
                h.reason.clone().unwrap_or_default(),
            ]
        }),
    );
    Ok(())
}

/// Waits for a task, prints it with its steps; exit 0 if complete, 1 if it failed or was
/// cancelled, 3 if still running when the wait ran out, 130 if Ctrl-C ended the wait.
/// `announce`: say first which task is waited for (one the user has not seen yet).
pub(super) async fn finish(
    client: &Client,
    id: Uuid,
    secs: f64,
    announce: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(task) = super::wait::wait(client, id, secs, announce, json).await? else {
        return Ok(super::wait::interrupted_code());
    };
    print_task_and_steps(&task, &client.steps(id).await?, json)?;
    Ok(match task.state.as_str() {
        "complete" => ExitCode::SUCCESS,
        "running" | "scheduled" => {
            eprintln!("task {id} is still {} after {secs} s", task.state);
            ExitCode::from(3)
        }
        _ => ExitCode::from(1),
    })
}

fn print_task(t: &Task, json: bool) -> anyhow::Result<()> {
    if json {
        output::one(t)?;
        return Ok(());
    }
    out!("task     {}", t.id);
    out!("template {}/{}@{}", t.namespace, t.name, t.version);
    out!("state    {}", t.state);
    if t.priority != "normal" {
        out!("priority {}", t.priority);
    }
    if let Some(at) = t.run_at {
        out!("run at   {}", super::clock::time(at));
    }
    if let Some(d) = &t.deadline {
        let within = tasker_shared::time::format_duration(std::time::Duration::from_millis(
            u64::try_from(d.within_ms).unwrap_or(0),
        ));
        let when = match (d.passed_at, d.at) {
            (Some(at), _) => format!("passed {}", super::clock::time(at)),
            (None, Some(at)) => format!("at {}", super::clock::time(at)),
            (None, None) if t.state == "scheduled" => "from its start".to_owned(),
            (None, None) => "not reached".to_owned(),
        };
        out!("deadline {within} ({}), {when}", d.action.as_str());
    }
    if let Some(d) = t.duration_ms {
        out!("took     {d:.1} ms");
    }
    if let Some(r) = &t.result {
        out!("result   {}", super::display::clip(&r.to_string()));
    }
    if let Some(e) = &t.error {
        out!("error    {}", super::display::clip(&e.to_string()));
    }
    if let (Some(parent), Some(step)) = (t.parent_task_id, t.parent_step_id) {
        out!("parent   {parent} (step {step}, depth {})", t.depth);
    }
    for c in t.children.iter().flatten() {
        out!(
            "child    {} {:<9} {}/{}@{} (step {} attempt {})",
            c.task_id,
            c.state,
            c.namespace,
            c.name,
            c.version,
            c.step_name,
            c.attempt
        );
    }
    Ok(())
}

/// A task and its steps; `--json`: one document, `{"task": …, "steps": […]}`.
fn print_task_and_steps(task: &Task, steps: &[Step], json: bool) -> anyhow::Result<()> {
    if json {
        output::one(&serde_json::json!({ "task": task, "steps": steps }))?;
        return Ok(());
    }
    print_task(task, false)?;
    print_steps(steps, &task.namespace);
    Ok(())
}

fn print_steps(steps: &[Step], task_namespace: &str) {
    let rows = steps.iter().map(|s| {
        let queue = ms_between(s.dispatched_at, s.started_at);
        // A running step's run so far.
        let ended = match s.state.as_str() {
            "running" => Some(chrono::Utc::now()),
            _ => s.finished_at,
        };
        let run = ms_between(s.started_at, ended);
        let shown = s.result.as_ref().or(s.error.as_ref());
        let shown = match (&s.wait, &s.child, s.state.as_str()) {
            (_, _, "throttled") => s.throttle.as_ref().map(throttled).unwrap_or_default(),
            (_, _, "running") => format!(
                "running on {} since {}",
                s.worker.as_deref().unwrap_or("?"),
                super::clock::maybe(s.started_at)
            ),
            (Some(w), _, "waiting") => waiting(w),
            (_, Some(c), "waiting" | "enqueued") => format!(
                "child {} ({}/{}@{})",
                c["task_id"].as_str().unwrap_or("starting"),
                c["namespace"].as_str().unwrap_or("?"),
                c["name"].as_str().unwrap_or("?"),
                c["version"].as_str().unwrap_or("?")
            ),
            _ if s.unserved => format!(
                "UNSERVED: no live worker serves namespace {} / handler {} (tasker workers)",
                s.namespace, s.handler
            ),
            _ => shown
                .map(|v| super::display::clip(&v.to_string()))
                .unwrap_or_default(),
        };
        // A step routed to another namespace than its task's says where.
        let name = if s.namespace.is_empty() || s.namespace == task_namespace {
            s.name.clone()
        } else {
            format!("{} [{}]", s.name, s.namespace)
        };
        vec![
            name,
            s.state.clone(),
            format!("{}/{}", s.attempt, s.max_attempts),
            queue,
            run,
            shown,
        ]
    });
    table::print(
        &[
            "STEP",
            "STATE",
            ">ATTEMPT",
            ">QUEUE ms",
            ">RUN ms",
            "RESULT",
        ],
        rows,
    );
}

/// What holds a throttled step: `concurrency shop/charge:A (limit 2) since …` or `rate stripe
/// (limit 100) until …`.
fn throttled(t: &Value) -> String {
    let text = |k: &str| t[k].as_str().unwrap_or("?").to_owned();
    let when = match t["until"].as_str() {
        Some(until) => format!("until {until}"),
        None => format!("since {}", text("since")),
    };
    format!(
        "{} {} (limit {}) {when}",
        text("kind"),
        text("key"),
        t["limit"]
    )
}

/// What a waiting step waits for: `signal approved until …`, `event payment.settled until …`
/// or `sleep until …`.
fn waiting(wait: &Value) -> String {
    let until = wait["until"].as_str().unwrap_or("?");
    let then = wait["on_timeout"].as_str().unwrap_or("fail");
    match (wait["signal"].as_str(), wait["event"].as_str()) {
        (_, Some(event)) => format!("event `{event}` until {until} (then {then})"),
        (Some(signal), None) => format!("signal `{signal}` until {until} (then {then})"),
        (None, None) => format!("{} until {until}", wait["kind"].as_str().unwrap_or("sleep")),
    }
}

fn ms_between(
    a: Option<chrono::DateTime<chrono::Utc>>,
    b: Option<chrono::DateTime<chrono::Utc>>,
) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!(
            "{:.2}",
            (b - a).num_microseconds().unwrap_or(0) as f64 / 1000.0
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_waiting_step_says_what_it_waits_for() {
        let until = "2026-12-01T09:00:00Z";
        assert_eq!(
            super::waiting(
                &json!({"kind": "event", "signal": null, "event": "payment.settled",
                                   "until": until, "on_timeout": "skip"})
            ),
            format!("event `payment.settled` until {until} (then skip)")
        );
        assert_eq!(
            super::waiting(
                &json!({"kind": "signal", "signal": "approved", "event": null,
                                   "until": until, "on_timeout": "fail"})
            ),
            format!("signal `approved` until {until} (then fail)")
        );
        assert_eq!(
            super::waiting(&json!({"kind": "sleep", "until": until})),
            format!("sleep until {until}")
        );
    }
}
