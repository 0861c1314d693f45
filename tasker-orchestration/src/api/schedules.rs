//! Schedules: a cron expression in a time zone that starts tasks of a template. Created or
//! updated by (namespace, name), paused with a note, resumed, triggered by hand, backfilled.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use tasker_shared::api::{ErrorBody, Schedule, ScheduleChanges, ScheduleList};
use tasker_shared::time::{Cron, FieldError, ScheduleSpec};

use super::access::Caller;
use super::extract::{Path, Query};
use super::{Error, check_filter, json_body, page_limit, unknown_template};
use crate::shared::Shared;
use crate::store::ScheduleRow;

/// Creates a schedule, or updates the one with its namespace and name: its definition changes;
/// its pause, counters and last fire stay, and its next fire moves only if its cron or time
/// zone changed. Workers register the `schedules/*.yaml` next to their templates this way.
#[utoipa::path(post, path = "/v1/schedules", operation_id = "put_schedule", tag = "schedules", request_body = ScheduleSpec,
    responses(
        (status = 201, description = "Created", body = Schedule),
        (status = 200, description = "Updated", body = Schedule),
        (status = 400, description = "`invalid_json`, `invalid_schedule`, `invalid_cron`, `invalid_timezone`, `invalid_catch_up` (details: field, problem)", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace, or one the template's tasks reach", body = ErrorBody),
        (status = 404, description = "`unknown_template`", body = ErrorBody),
        (status = 409, description = "`too_many_schedules`: the namespace has `orchestrator.max_schedules_per_namespace` schedules", body = ErrorBody),
        (status = 422, description = "`context_schema_violation`: the context does not match the template's schema", body = ErrorBody),
    ))]
pub(super) async fn put(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Error> {
    let spec: ScheduleSpec = json_body(&shared, body)?;
    caller
        .audit()
        .target("schedule", format!("{}/{}", spec.namespace, spec.name));
    caller.check(&spec.namespace)?;
    let (row, created) = save(&shared, &caller, &spec).await?;
    tracing::info!(schedule = %format!("{}/{}", row.namespace, row.name), created, "schedule saved");
    Ok(super::saved(Schedule::from(row), created))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListQuery {
    namespace: Option<String>,
    /// Schedules per page: 1 to 1,000, 500 by default.
    limit: Option<i64>,
    /// The previous page's `next` (`namespace/name` of its last schedule).
    after: Option<String>,
}

/// Schedules by namespace and name, a page at a time (a token scoped to namespaces sees
/// those): follow `next` while it is set.
#[utoipa::path(get, path = "/v1/schedules", operation_id = "list_schedules", tag = "schedules", params(ListQuery),
    responses(
        (status = 200, body = ScheduleList),
        (status = 400, description = "`invalid_query`, `invalid_limit`", body = ErrorBody),
        (status = 403, description = "`forbidden`: `namespace` is one the token does not cover", body = ErrorBody),
        (status = 503, description = "`query_timeout`: the query ran past `orchestrator.list_timeout_ms`", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(shared): State<Shared>,
    caller: Caller,
    Query(q): Query<ListQuery>,
) -> Result<Json<ScheduleList>, Error> {
    check_filter("namespace", q.namespace.as_deref())?;
    if let Some(ns) = &q.namespace {
        caller.check(ns)?;
    }
    let limit = page_limit(q.limit)?;
    let after = q
        .after
        .as_deref()
        .map(|a| {
            a.split_once('/').ok_or_else(|| {
                Error::bad_request("invalid_query", "`after` is the `next` of a previous page")
            })
        })
        .transpose()?;
    let rows = shared
        .store
        .schedules(
            q.namespace.as_deref(),
            caller.namespace_regex().as_deref(),
            after,
            limit,
        )
        .await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| format!("{}/{}", r.namespace, r.name)))
        .flatten();
    Ok(Json(ScheduleList {
        schedules: rows.into_iter().map(Schedule::from).collect(),
        next,
    }))
}

/// A schedule, with its next five fires.
#[utoipa::path(get, path = "/v1/schedules/{namespace}/{name}", operation_id = "get_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses(
        (status = 200, body = Schedule),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`", body = ErrorBody),
    ))]
pub(super) async fn show(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Schedule>, Error> {
    let row = find(&shared, &caller, &namespace, &name).await?;
    Ok(Json(with_upcoming(row)))
}

/// Changes some of a schedule's definition (the fields given).
#[utoipa::path(patch, path = "/v1/schedules/{namespace}/{name}", operation_id = "update_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    request_body = ScheduleChanges,
    responses(
        (status = 200, body = Schedule),
        (status = 400, description = "`invalid_json`, `invalid_schedule`, `invalid_cron`, `invalid_timezone`, `invalid_catch_up`", body = ErrorBody),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`, `unknown_template`", body = ErrorBody),
        (status = 422, description = "`context_schema_violation`", body = ErrorBody),
    ))]
pub(super) async fn update(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Schedule>, Error> {
    let changes: ScheduleChanges = json_body(&shared, body)?;
    let row = find(&shared, &caller, &namespace, &name).await?;
    let mut spec = row.spec();
    let ScheduleChanges {
        template,
        version,
        cron,
        timezone,
        context,
        overlap,
        catch_up,
    } = changes;
    spec.template = template.unwrap_or(spec.template);
    if let Some(v) = version {
        spec.version = (!v.is_empty()).then_some(v);
    }
    spec.cron = cron.unwrap_or(spec.cron);
    spec.timezone = timezone.unwrap_or(spec.timezone);
    spec.context = context.or(spec.context);
    spec.overlap = overlap.unwrap_or(spec.overlap);
    spec.catch_up = catch_up.or(spec.catch_up);
    let (row, _) = save(&shared, &caller, &spec).await?;
    Ok(Json(with_upcoming(row)))
}

/// Deletes a schedule; the tasks it started stay.
#[utoipa::path(delete, path = "/v1/schedules/{namespace}/{name}", operation_id = "delete_schedule", tag = "schedules",
    params(("namespace" = String, Path), ("name" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "`forbidden`: the token does not cover the namespace", body = ErrorBody),
        (status = 404, description = "`schedule_not_found`", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(shared): State<Shared>,
    caller: Caller,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<StatusCode, Error> {
    caller.check(&namespace)?;
    if shared.store.delete_schedule(&namespace, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&namespace, &name))
    }
}

/// A refusal by a bound: its configuration key and value in the details, and counted.
pub(super) fn bounded(
    status: StatusCode,
    code: &'static str,
    bound: &'static str,
    limit: usize,
    message: String,
) -> Error {
    ::metrics::counter!(crate::metrics::BOUNDS_REFUSED.name, "bound" => bound).increment(1);
    Error::new(status, code, message).with_details(json!({ "bound": bound, "limit": limit }))
}

/// Checks a definition against the templates and saves it.
async fn save(
    shared: &Shared,
    caller: &Caller,
    spec: &ScheduleSpec,
) -> Result<(ScheduleRow, bool), Error> {
    let (cron, catch_up) = compiled(spec)?;
    let entry = shared
        .catalog
        .get(&spec.namespace, &spec.template, spec.version.as_deref())
        .await?
        .ok_or_else(|| {
            unknown_template(&spec.namespace, &spec.template, spec.version.as_deref())
        })?;
    let context = spec.context.clone().unwrap_or_else(|| json!({}));
    if let Err(problems) = entry.loaded.check_context(&context) {
        return Err(Error::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "context_schema_violation",
            format!(
                "the schedule's context does not match the schema of {}: {}",
                entry.loaded.template.key(),
                problems.join("; ")
            ),
        )
        .with_details(json!(problems)));
    }
    // Its fires are judged with this token: it must reach what they do.
    caller.check_template(shared, &entry.loaded).await?;
    let next = cron.next_after(shared.store.now().await?);
    let max = shared.config.orchestrator.max_schedules_per_namespace;
    shared
        .store
        .put_schedule(
            spec,
            catch_up.as_millis() as i64,
            next,
            actor(caller).as_deref(),
            caller.token_id(),
            max,
        )
        .await?
        .ok_or_else(|| {
            bounded(
                StatusCode::CONFLICT,
                "too_many_schedules",
                "orchestrator.max_schedules_per_namespace",
                max,
                format!(
                    "namespace {:?} has {max} schedules, the most a namespace may \
                     (orchestrator.max_schedules_per_namespace); delete one first",
                    spec.namespace
                ),
            )
        })
}

/// Ok if the caller reaches every namespace a task of the schedule's template reaches (when the
/// template is not registered, the trigger or backfill says so itself).
pub(super) async fn check_reach(
    shared: &Shared,
    caller: &Caller,
    row: &ScheduleRow,
) -> Result<(), Error> {
    let entry = shared
        .catalog
        .get(&row.namespace, &row.template, row.version.as_deref())
        .await?;
    match entry {
        Some(entry) => caller.check_template(shared, &entry.loaded).await,
        None => Ok(()),
    }
}

/// The definition's cron and catch-up window, or a 400 naming the field.
pub(super) fn compiled(spec: &ScheduleSpec) -> Result<(Cron, std::time::Duration), Error> {
    spec.check().map_err(invalid)
}

fn invalid(e: FieldError) -> Error {
    let code = match e.field.as_str() {
        "cron" => "invalid_cron",
        "timezone" => "invalid_timezone",
        "catch_up" => "invalid_catch_up",
        _ => "invalid_schedule",
    };
    Error::bad_request(code, e.to_string())
        .with_details(json!({"field": e.field, "problem": e.problem}))
}

pub(super) async fn find(
    shared: &Shared,
    caller: &Caller,
    namespace: &str,
    name: &str,
) -> Result<ScheduleRow, Error> {
    caller.check(namespace)?;
    shared
        .store
        .schedule(namespace, name)
        .await?
        .ok_or_else(|| not_found(namespace, name))
}

pub(super) fn not_found(namespace: &str, name: &str) -> Error {
    Error::not_found(
        "schedule_not_found",
        format!("no schedule {namespace}/{name}"),
    )
}

/// The schedule with its next five fires.
pub(super) fn with_upcoming(row: ScheduleRow) -> Schedule {
    let next = row.next_fire_at;
    let cron = row.spec().check().ok();
    let mut schedule = Schedule::from(row);
    if let (Some(first), Some((cron, _))) = (next, cron)
        && !schedule.paused
    {
        schedule.upcoming = std::iter::once(first)
            .chain(cron.upcoming(first, 4))
            .collect();
    }
    schedule
}

/// Who saves a schedule, as recorded: the token's name.
pub(super) fn actor(caller: &Caller) -> Option<String> {
    caller.principal().map(|p| format!("token:{}", p.name))
}
