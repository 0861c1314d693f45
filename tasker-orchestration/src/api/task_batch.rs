//! Creating many tasks in one request (`POST /v1/tasks:batch`): each item checked as `POST
//! /v1/tasks` checks it ([`super::task_create`]), all created in one statement.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::api::{
    BatchCreated, BatchItem, BatchStatus, CreateTask, CreateTasks, ErrorBody,
};

use super::Error;
use super::access::Caller;
use super::start_controls;
use super::task_create::{check_request, key_reused, refused_body};
use crate::executor;
use crate::shared::Shared;
use crate::store::{CreateBatch, NewTask};

/// Creates many tasks in one request and one transaction: each item is what `POST /v1/tasks`
/// takes and gets its own result, in order — `created`, `existing` (its idempotency key's
/// task, same template and context) or `refused` with the error `POST /v1/tasks` would answer
/// (nothing is created for it; the others are). A repeated request creates nothing new.
#[utoipa::path(post, path = "/v1/tasks:batch", tag = "tasks", operation_id = "create_tasks",
    request_body = CreateTasks,
    responses(
        (status = 200, description = "Each item's result, in request order", body = BatchCreated),
        (status = 400, description = "`invalid_json` (not `{\"tasks\": [...]}`), `empty_batch`, `duplicate_idempotency_key` (two items share a key; details: the key and both indexes)", body = ErrorBody),
        (status = 413, description = "`batch_too_large` (more items than `orchestrator.max_batch_tasks`, 10,000 by default), `body_too_large` (over `orchestrator.max_batch_body_bytes`)", body = ErrorBody),
    ))]
pub(super) async fn create_tasks(
    State(shared): State<Shared>,
    caller: Caller,
    body: axum::body::Body,
) -> Result<Json<BatchCreated>, Error> {
    let o = &shared.config.orchestrator;
    let body = batch_body(o, body).await?;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Items<'a> {
        #[serde(borrow)]
        tasks: Vec<&'a RawValue>,
    }
    let items: Items = serde_json::from_slice(&body).map_err(|e| {
        Error::bad_request(
            "invalid_json",
            format!("the body must be {{\"tasks\": [task, ...]}}: {e}"),
        )
    })?;
    if items.tasks.is_empty() {
        return Err(Error::bad_request("empty_batch", "`tasks` holds no task"));
    }
    if items.tasks.len() > o.max_batch_tasks {
        return Err(Error::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!(
                "{} tasks in one request; the limit is {} (orchestrator.max_batch_tasks)",
                items.tasks.len(),
                o.max_batch_tasks
            ),
        )
        .with_details(json!({ "tasks": items.tasks.len(), "limit": o.max_batch_tasks })));
    }
    ::metrics::histogram!(crate::metrics::TASKS_BATCH_CREATED.name)
        .record(items.tasks.len() as f64);
    let parsed: Vec<Result<CreateTask, Error>> = items
        .tasks
        .iter()
        .map(|raw| {
            serde_json::from_str(raw.get()).map_err(|e| refused_body(raw.get().as_bytes(), e))
        })
        .collect();
    check_unique_keys(&parsed)?;
    let mut results: Vec<Option<BatchItem>> = vec![None; parsed.len()];
    // The item of each task in the batch, with its template and (keyed only) its context, to
    // tell a repeat from a reused key.
    let mut placed: Vec<(usize, Uuid, Option<Value>)> = Vec::new();
    let mut batch = CreateBatch::default();
    for (index, item) in parsed.into_iter().enumerate() {
        let len = items.tasks[index].get().len();
        let checked = match item {
            Ok(req) => check_request(&shared, &caller, req, len).await,
            Err(e) => Err(e),
        };
        let added = checked.and_then(|c| {
            let keyed = c.idempotency_key.is_some().then(|| c.context.clone());
            let template = c.entry.id;
            batch
                .add(NewTask {
                    template_id: c.entry.id,
                    template: &c.entry.loaded,
                    context: c.context,
                    idempotency_key: c.idempotency_key,
                    run_at: c.run_at,
                    children: c.children,
                    parent: None,
                    priority: c.priority,
                    token_id: caller.token_id(),
                    controls: c.controls,
                    deadline: c.deadline,
                })
                .map(|()| (template, keyed))
                .map_err(|k| crate::store::Error::Limits(k).into())
        });
        match added {
            Ok((template, keyed)) => placed.push((index, template, keyed)),
            Err(e) => results[index] = Some(refused(index, e)),
        }
    }
    let answers = if batch.is_empty() {
        Vec::new()
    } else {
        let (answers, effects) = shared.store.create_tasks(&batch).await?;
        executor::execute(&shared, effects).await;
        answers
    };
    for ((index, template, keyed), a) in placed.into_iter().zip(answers) {
        start_controls::count(a.controlled());
        results[index] = Some(if a.created {
            item(index, BatchStatus::Created, a.task_id)
        } else if a.debounced || (a.template_id == template && keyed.as_ref() == Some(&a.context)) {
            item(index, BatchStatus::Existing, a.task_id)
        } else {
            refused(index, key_reused(a.task_id))
        });
    }
    let results: Vec<BatchItem> = results.into_iter().flatten().collect();
    Ok(Json(tally(&caller, results)))
}

/// A batch request's body, up to `orchestrator.max_batch_body_bytes`.
pub(super) async fn batch_body(
    o: &tasker_shared::config::OrchestratorConfig,
    body: axum::body::Body,
) -> Result<axum::body::Bytes, Error> {
    axum::body::to_bytes(body, o.max_batch_body_bytes)
        .await
        .map_err(|_| {
            Error::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!(
                    "request body exceeds {} bytes (orchestrator.max_batch_body_bytes)",
                    o.max_batch_body_bytes
                ),
            )
        })
}

/// The answer to a batch: each item's result with the counts, which its audit row records.
fn tally(caller: &Caller, results: Vec<BatchItem>) -> BatchCreated {
    let count = |s: BatchStatus| results.iter().filter(|r| r.status == s).count();
    let (created, existing, refused) = (
        count(BatchStatus::Created),
        count(BatchStatus::Existing),
        count(BatchStatus::Refused),
    );
    caller.audit().target(
        "tasks",
        json!({ "created": created, "existing": existing, "refused": refused }),
    );
    BatchCreated {
        created,
        existing,
        refused,
        results,
    }
}

fn item(index: usize, status: BatchStatus, task_id: Uuid) -> BatchItem {
    BatchItem {
        index,
        status,
        task_id: Some(task_id),
        error: None,
    }
}

fn refused(index: usize, e: Error) -> BatchItem {
    BatchItem {
        index,
        status: BatchStatus::Refused,
        task_id: None,
        error: Some(e.detail()),
    }
}

/// No two items of a batch may share an idempotency key (which would they answer?).
fn check_unique_keys(items: &[Result<CreateTask, Error>]) -> Result<(), Error> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (index, item) in items.iter().enumerate() {
        let Some(key) = item.as_ref().ok().and_then(start_controls::idempotency_key) else {
            continue;
        };
        if let Some(first) = seen.insert(key, index) {
            return Err(Error::bad_request(
                "duplicate_idempotency_key",
                format!("items {first} and {index} share the idempotency key {key:?}"),
            )
            .with_details(json!({ "key": key, "indexes": [first, index] })));
        }
    }
    Ok(())
}
