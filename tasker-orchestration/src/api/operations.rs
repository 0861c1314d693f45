//! Operations by filter: retry, resolve or cancel every task a filter matches, replay or discard
//! every dead letter one matches. Starting one writes down the tasks (dead letters) it matched, within the namespaces the caller's token covers, and
//! answers at once with the exact count; the orchestrators' operations loops
//! (`crate::operations`) act on them in batches, judging the token again before each one.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;
use uuid::Uuid;

use tasker_shared::TaskState;
use tasker_shared::api::{
    ErrorBody, Operation, OperationCount, OperationFilter, OperationList, StartOperation,
};
use tasker_shared::json_check;

use super::access::Caller;
use super::extract::Path;
use super::repair::{actor, check_note};
use super::{Error, check_limit, json_body, parse_id};
use crate::shared::Shared;
use crate::store::{NewOperation, Scope, Started};

/// The most ids a filter may list.
const MAX_IDS: usize = 10_000;

/// Starts an operation on every task `filter` matches in the namespaces the token covers (or,
/// with `dry_run`, counts them). The answer comes at once with the exact count; the tasks are
/// acted on in batches at `operations.busy_percent` of the time, each once, whichever
/// orchestrator goes on with it. Each task's history names the operation, its reason and who
/// asked.
#[utoipa::path(post, path = "/v1/operations", operation_id = "start_operation", tag = "bulk",
    request_body = StartOperation,
    responses(
        (status = 201, description = "Started", body = Operation),
        (status = 200, description = "A dry run: what it would act on", body = OperationCount),
        (status = 400, description = "`invalid_json`, `invalid_action`, `invalid_filter`, `missing_result`, `invalid_result`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `filter.namespace` is one the token does not cover; replay and discard need an admin token", body = ErrorBody),
        (status = 422, description = "`too_many_tasks`: the filter matches more than `operations.max_tasks`", body = ErrorBody),
    ))]
pub(super) async fn start(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let body: StartOperation = json_body(&shared, body)?;
    let filter = check(&shared, &caller, &body)?;
    let covers = caller.namespace_regex();
    if body.dry_run {
        let count = if OperationFilter::of_dead_letters(&body.action) {
            let (matched, dead_letter_sample) = shared
                .store
                .count_dead_letters(&filter, covers.as_deref())
                .await?;
            OperationCount {
                action: body.action,
                filter,
                matched,
                sample: Vec::new(),
                dead_letter_sample,
            }
        } else {
            let (matched, sample) = shared
                .store
                .count_operation(&body.action, &filter, covers.as_deref())
                .await?;
            OperationCount {
                action: body.action,
                filter,
                matched,
                sample,
                dead_letter_sample: Vec::new(),
            }
        };
        return Ok(Json(count).into_response());
    }
    let new = NewOperation {
        action: body.action,
        filter,
        resolution: body.result,
        reason: body.reason,
        actor: actor(body.by, caller.principal().cloned()),
        token_id: caller.token_id(),
        covers,
    };
    let max = shared.config.operations.max_tasks;
    match shared.store.start_operation(&new, max).await? {
        Started::Created(op) => {
            caller.audit().target("operation", op.id.to_string());
            caller.audit().target("matched", op.matched);
            shared.operations.notify_one();
            Ok((StatusCode::CREATED, Json(*op)).into_response())
        }
        Started::TooMany => Err(Error::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_many_tasks",
            format!(
                "the filter matches more than {max} tasks (operations.max_tasks): narrow it, \
                 e.g. by created_after and created_before, and run several operations"
            ),
        )),
    }
}

/// The request checked, and its filter as it will be applied: 400 for a bad action, filter,
/// note or result, 403 for a namespace the token does not cover.
fn check(
    shared: &Shared,
    caller: &Caller,
    body: &StartOperation,
) -> Result<OperationFilter, Error> {
    let action = body.action.as_str();
    if !matches!(
        action,
        "retry" | "resolve" | "cancel" | "replay" | "discard"
    ) {
        return Err(Error::bad_request(
            "invalid_action",
            format!("unknown action {action:?}; use retry, resolve, cancel, replay or discard"),
        ));
    }
    check_note(body.by.as_deref(), body.reason.as_deref())?;
    if OperationFilter::of_dead_letters(action) {
        return check_dead_letters(shared, caller, body);
    }
    if let Some(field) = dead_letter_field(&body.filter) {
        return Err(Error::bad_request(
            "invalid_filter",
            format!("`filter.{field}` selects dead letters; {action} acts on tasks"),
        ));
    }
    match (&body.result, action) {
        (None, "resolve") => {
            return Err(Error::bad_request(
                "missing_result",
                "resolve needs `result`: the failed steps' result, as their handler would have \
                 returned it (any JSON but null)",
            ));
        }
        (Some(_), "retry" | "cancel") => {
            return Err(Error::bad_request(
                "invalid_json",
                format!("{action} takes no `result`; only resolve does"),
            ));
        }
        (Some(result), _) => {
            if let Err(problem) = json_check::check(result, json_check::MAX_DEPTH) {
                return Err(
                    Error::bad_request("invalid_result", format!("`result` {problem}"))
                        .with_details(json!({ "problem": problem.code() })),
                );
            }
        }
        (None, _) => {}
    }
    let mut f = body.filter.clone();
    check_filter(shared, &f)?;
    if let Some(ns) = &f.namespace {
        caller.check(ns)?;
    }
    check_state(action, f.state.as_deref())?;
    if action != "cancel" {
        f.state = Some("error".into());
    }
    Ok(f)
}

/// A replay or discard: an admin token's (as one dead letter's are), no `result`, and a filter
/// of dead letters.
fn check_dead_letters(
    shared: &Shared,
    caller: &Caller,
    body: &StartOperation,
) -> Result<OperationFilter, Error> {
    let action = body.action.as_str();
    if caller.principal().is_some_and(|p| p.scope < Scope::Admin) {
        return Err(caller.forbidden(format!(
            "{action} acts on dead letters: it needs an admin token"
        )));
    }
    if body.result.is_some() {
        return Err(Error::bad_request(
            "invalid_json",
            format!("{action} takes no `result`; only resolve does"),
        ));
    }
    let f = &body.filter;
    let task_field = [
        ("name", f.name.is_some()),
        ("version", f.version.is_some()),
        ("state", f.state.is_some()),
        ("step", f.step.is_some()),
        ("error_kind", f.error_kind.is_some()),
        ("context", f.context.is_some()),
        ("ids", f.ids.is_some()),
    ]
    .into_iter()
    .find_map(|(field, given)| given.then_some(field));
    if let Some(field) = task_field {
        return Err(Error::bad_request(
            "invalid_filter",
            format!("`filter.{field}` selects tasks; {action} acts on dead letters"),
        ));
    }
    check_filter(shared, f)?;
    if let Some(ns) = &f.namespace {
        caller.check(ns)?;
    }
    Ok(f.clone())
}

/// The first field of `f` that selects dead letters, if any.
fn dead_letter_field(f: &OperationFilter) -> Option<&'static str> {
    [
        ("queue", f.queue.is_some()),
        ("reason", f.reason.is_some()),
        ("dead_letters", f.dead_letters.is_some()),
    ]
    .into_iter()
    .find_map(|(field, given)| given.then_some(field))
}

/// Text fields bounded and free of control characters, at most [`MAX_IDS`] ids, a context
/// object within `orchestrator.max_context_filter_bytes`, a time range in order.
fn check_filter(shared: &Shared, f: &OperationFilter) -> Result<(), Error> {
    let invalid = |message: String| Error::bad_request("invalid_filter", message);
    for (field, value) in [
        ("namespace", &f.namespace),
        ("name", &f.name),
        ("version", &f.version),
        ("step", &f.step),
        ("error_kind", &f.error_kind),
        ("queue", &f.queue),
        ("reason", &f.reason),
    ] {
        if let Some(v) = value
            && (v.is_empty() || v.len() > 128 || v.chars().any(char::is_control))
        {
            return Err(invalid(format!(
                "`filter.{field}` must be 1 to 128 characters, none of them control characters"
            )));
        }
    }
    if f.ids.as_ref().is_some_and(|ids| ids.len() > MAX_IDS)
        || f.dead_letters
            .as_ref()
            .is_some_and(|ids| ids.len() > MAX_IDS)
    {
        return Err(invalid(format!(
            "`filter.ids` and `filter.dead_letters` list at most {MAX_IDS} ids"
        )));
    }
    if let Some(context) = &f.context {
        let max = shared.config.orchestrator.max_context_filter_bytes;
        if !context.is_object() || context.to_string().len() > max {
            return Err(invalid(format!(
                "`filter.context` must be a JSON object of at most {max} bytes"
            )));
        }
    }
    if let (Some(after), Some(before)) = (f.created_after, f.created_before)
        && after >= before
    {
        return Err(invalid(
            "`filter.created_after` must be before `filter.created_before`".into(),
        ));
    }
    Ok(())
}

/// retry and resolve act on tasks in `error`, cancel on `running` and `scheduled` ones.
fn check_state(action: &str, state: Option<&str>) -> Result<(), Error> {
    let Some(state) = state else {
        return Ok(());
    };
    let takes: &[TaskState] = match action {
        "cancel" => &[TaskState::Running, TaskState::Scheduled],
        _ => &[TaskState::Error],
    };
    match TaskState::parse(state) {
        Some(s) if takes.contains(&s) => Ok(()),
        _ => Err(Error::bad_request(
            "invalid_filter",
            format!(
                "{action} acts on tasks in {}, not {state:?}",
                takes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        )),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    /// At most this many (1 to 500, default 50).
    limit: Option<i64>,
    /// The `next_before` of the previous page.
    before: Option<String>,
}

/// Operations, newest first; a token scoped to namespaces sees the ones it started.
#[utoipa::path(get, path = "/v1/operations", operation_id = "list_operations", tag = "bulk", params(ListQuery),
    responses(
        (status = 200, body = OperationList),
        (status = 400, description = "`invalid_limit`, `invalid_id`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<OperationList>, Error> {
    let limit = check_limit(q.limit)?;
    let before = q.before.as_deref().map(parse_id).transpose()?;
    let mine = caller.namespace_regex().and(caller.token_id());
    let operations = shared.store.operations(mine, before, limit).await?;
    let next_before = if operations.len() as i64 == limit {
        operations.last().map(|o| o.id)
    } else {
        None
    };
    Ok(Json(OperationList {
        operations,
        next_before,
    }))
}

/// Operation `id`, if the caller may see it: a token scoped to namespaces sees the ones it
/// started (404 for the others, as if there were none).
async fn visible(shared: &Shared, caller: &Caller, id: Uuid) -> Result<Operation, Error> {
    let mine = caller.namespace_regex().and(caller.token_id());
    shared
        .store
        .operation(id, mine)
        .await?
        .ok_or_else(|| Error::not_found("operation_not_found", format!("no operation {id}")))
}

/// An operation and its progress.
#[utoipa::path(get, path = "/v1/operations/{id}", operation_id = "get_operation", tag = "bulk",
    params(("id" = Uuid, Path, description = "The operation's id")),
    responses(
        (status = 200, body = Operation),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 404, description = "`operation_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Operation>, Error> {
    let id = parse_id(&id)?;
    Ok(Json(visible(&shared, &caller, id).await?))
}

/// Cancels a running operation: the tasks it has not reached are left as they are (those it
/// acted on stay acted on).
#[utoipa::path(post, path = "/v1/operations/{id}/cancel", operation_id = "cancel_operation", tag = "bulk",
    params(("id" = Uuid, Path, description = "The operation's id")),
    responses(
        (status = 200, description = "The operation, cancelled", body = Operation),
        (status = 400, description = "`invalid_id`", body = ErrorBody),
        (status = 404, description = "`operation_not_found`", body = ErrorBody),
        (status = 409, description = "`operation_finished`: it already ended", body = ErrorBody),
    ))]
pub(super) async fn cancel(
    State(shared): State<Shared>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Operation>, Error> {
    let id = parse_id(&id)?;
    let op = visible(&shared, &caller, id).await?;
    caller.audit().target("operation", id.to_string());
    if op.is_finished() {
        return Err(Error::new(
            StatusCode::CONFLICT,
            "operation_finished",
            format!("operation {id} already ended: {}", op.state),
        ));
    }
    let who = actor(None, caller.principal().cloned()).unwrap_or_else(|| "request".into());
    let op = shared
        .store
        .end_operation(id, "cancelled", &format!("cancelled by {who}"))
        .await?
        .ok_or_else(|| Error::not_found("operation_not_found", format!("no operation {id}")))?;
    Ok(Json(op))
}
