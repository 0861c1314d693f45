//! What an event starts: each template of its namespace whose newest version has a trigger
//! matching it gets a task, with the context the trigger makes, judged as `POST /v1/tasks`
//! would judge it for the sender's token (its reach, the template's schema, its child
//! templates), all stored with the event in one transaction.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::api::ErrorDetail;
use tasker_shared::flow::Priority;
use tasker_shared::triggers::Control;

use super::Error;
use super::access::Caller;
use super::task_create::pin_children;
use crate::catalog::Entry;
use crate::effects::Effects;
use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{Controls, NewEvent, NewTask, Stored};

/// An event that passed the request's checks, about to be stored.
#[derive(Debug)]
pub(super) struct Checked {
    pub id: Uuid,
    pub namespace: String,
    pub name: String,
    pub key: Option<String>,
    pub sender_id: Option<String>,
    pub data: Value,
}

/// What a task an event starts is made of: its context, its pinned children, its priority,
/// and its trigger's start control with the key the event gives it.
type TaskParts = (
    Value,
    Vec<Option<Value>>,
    Priority,
    Option<(String, Control)>,
);

/// A template an event matched, and the task it would start (or why it starts none).
struct Start {
    entry: Arc<Entry>,
    task: Result<TaskParts, ErrorDetail>,
}

/// Stores `events` with the tasks their triggers start, in one transaction; carries out what
/// that leaves to do. Answers each event in order.
pub(super) async fn record(
    shared: &Shared,
    caller: &Caller,
    events: Vec<Checked>,
) -> Result<Vec<Stored>, Error> {
    let mut triggered: HashMap<(String, String), Vec<Arc<Entry>>> = HashMap::new();
    let mut judged: HashMap<Uuid, Judged> = HashMap::new();
    let mut prepared: Vec<(Checked, Vec<Start>)> = Vec::with_capacity(events.len());
    for event in events {
        let k = (event.namespace.clone(), event.name.clone());
        if !triggered.contains_key(&k) {
            let found = shared
                .catalog
                .triggered_by(&event.namespace, &event.name)
                .await?;
            triggered.insert(k.clone(), found);
        }
        let mut starts = Vec::new();
        for entry in &triggered[&k] {
            if let std::collections::hash_map::Entry::Vacant(v) = judged.entry(entry.id) {
                v.insert(judge(shared, caller, entry).await);
            }
            if let Some(task) = start(&event, entry, &judged[&entry.id]) {
                starts.push(Start {
                    entry: entry.clone(),
                    task,
                });
            }
        }
        prepared.push((event, starts));
    }
    let new: Vec<NewEvent<'_>> = prepared
        .iter()
        .map(|(e, starts)| NewEvent {
            id: e.id,
            namespace: e.namespace.clone(),
            name: e.name.clone(),
            key: e.key.clone(),
            sender_id: e.sender_id.clone(),
            data: e.data.clone(),
            token_id: caller.token_id(),
            starts: starts
                .iter()
                .map(|s| (s.entry.loaded.template.key(), new_task(caller, e, s)))
                .collect(),
        })
        .collect();
    let (stored, effects): (Vec<Stored>, Effects) = shared.store.record_events(new).await?;
    crate::executor::execute(shared, effects).await;
    for s in &stored {
        let (outcome, event) = match s {
            Stored::Created(e) => ("created", e),
            Stored::Existing(e) => ("existing", e),
        };
        ::metrics::counter!(m::EVENTS_RECEIVED.name, "outcome" => outcome).increment(1);
        if let Stored::Created(_) = s {
            for start in &event.started {
                let outcome = if start.debounced {
                    "debounced"
                } else if start.deduplicated {
                    "deduplicated"
                } else if start.task_id.is_some() {
                    "started"
                } else {
                    "refused"
                };
                ::metrics::counter!(m::EVENT_STARTS.name, "outcome" => outcome).increment(1);
                if start.debounced || start.deduplicated {
                    ::metrics::counter!(m::START_CONTROLS_HELD.name, "outcome" => outcome)
                        .increment(1);
                }
            }
        }
    }
    Ok(stored)
}

/// What a template's tasks need whatever the event: the sender's token judged for its reach,
/// its child templates pinned. Judged once per template and request.
type Judged = Result<Vec<Option<Value>>, ErrorDetail>;

async fn judge(shared: &Shared, caller: &Caller, entry: &Entry) -> Judged {
    async {
        // The sender's token starts this task: it must reach every namespace the template
        // does, as a `POST /v1/tasks` of it would.
        caller.check_template(shared, &entry.loaded).await?;
        pin_children(shared, &entry.loaded).await
    }
    .await
    .map_err(Error::detail)
}

/// The task `event` starts from `entry`: `None` when none of its triggers matches; else its
/// context, children and priority, or why the sender may not start it.
fn start(
    event: &Checked,
    entry: &Entry,
    judged: &Judged,
) -> Option<Result<TaskParts, ErrorDetail>> {
    let doc = tasker_shared::triggers::event_document(
        &event.id.to_string(),
        &event.name,
        event.key.as_deref(),
        &event.data,
    );
    let trigger = entry
        .loaded
        .triggers
        .iter()
        .find(|t| t.matches(&event.name, &doc))?;
    let context = match trigger.context(&doc) {
        Ok(c) => c,
        Err(message) => return Some(Err(Error::bad_request("invalid_context", message).detail())),
    };
    if let Err(problems) = entry.loaded.check_context(&context) {
        return Some(Err(Error::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "context_schema_violation",
            format!(
                "the context the trigger made does not match the schema of {}: {}",
                entry.loaded.template.key(),
                problems.join("; ")
            ),
        )
        .with_details(json!(problems))
        .detail()));
    }
    let control = match trigger.control_key(&doc) {
        Ok(c) => c,
        Err(message) => {
            return Some(Err(Error::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "start_key_missing",
                message,
            )
            .detail()));
        }
    };
    let priority = entry.loaded.template.priority.unwrap_or_default();
    Some(
        judged
            .clone()
            .map(|children| (context, children, priority, control)),
    )
}

fn new_task<'a>(
    caller: &Caller,
    event: &Checked,
    start: &'a Start,
) -> Result<NewTask<'a>, ErrorDetail> {
    let (context, children, priority, control) = start.task.clone()?;
    let t = &start.entry.loaded.template;
    // One task per event and template, whichever orchestrator stores it; under a dedupe
    // window, one per key and template for its TTL.
    let mut idempotency_key = Some(format!("event:{}:{}", event.id, t.name));
    let mut controls = Controls::default();
    match control {
        Some((key, Control::Dedupe(window))) => {
            idempotency_key = Some(format!("event-dedupe:{}/{}:{key}", t.namespace, t.name));
            controls.dedupe = Some(window);
        }
        Some((key, Control::Debounce(debounce))) => controls.debounce = Some((key, debounce)),
        None => {}
    }
    Ok(NewTask {
        template_id: start.entry.id,
        template: &start.entry.loaded,
        context,
        idempotency_key,
        run_at: None,
        children,
        parent: None,
        priority,
        token_id: caller.token_id(),
        controls,
        deadline: None,
    })
}
