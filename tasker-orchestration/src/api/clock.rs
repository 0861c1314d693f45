//! `/v1/clock`: the engine's clock, and in test mode (`tasker-orchestrator test-env`) the
//! routes a test moves it with (docs/testing.md).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;

use tasker_shared::api::{AdvanceClock, Clock, ErrorBody, Skipped};

use super::access::Caller;
use super::{Error, json_body};
use crate::shared::Shared;

/// The engine's clock: its time (the wall clock's unless a test moved it), the next timer it
/// will ring, and whether a step is with a worker. Any token.
#[utoipa::path(get, path = "/v1/clock", tag = "clock", operation_id = "get_clock",
    responses((status = 200, body = Clock)))]
pub(super) async fn show(State(shared): State<Shared>) -> Result<Json<Clock>, Error> {
    Ok(Json(shared.store.clock_state().await?))
}

/// Test mode: moves the engine's clock forward by `by`; every timer now due has rung when it
/// answers.
/// Admin scope, every namespace.
#[utoipa::path(post, path = "/v1/clock/advance", tag = "clock", operation_id = "advance_clock",
    request_body = AdvanceClock,
    responses(
        (status = 200, body = Clock),
        (status = 400, description = "`invalid_json`, `invalid_by` (not a duration, or zero)", body = ErrorBody),
        (status = 403, description = "`forbidden`: not an admin token of every namespace", body = ErrorBody),
        (status = 409, description = "`test_clock_off`: this orchestrator is not in test mode", body = ErrorBody),
    ))]
pub(super) async fn advance(
    State(shared): State<Shared>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Clock>, Error> {
    test_mode(&shared, &caller)?;
    let req: AdvanceClock = json_body(&shared, body)?;
    let by = tasker_shared::time::parse_duration("by", &req.by)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::bad_request(
                "invalid_by",
                format!(
                    "`by` must be a duration such as 90s, 3d or 1h30m (got {:?})",
                    req.by
                ),
            )
        })?;
    let clock = shared.store.advance_clock(by).await?;
    ring(&shared).await?;
    Ok(Json(clock))
}

/// Test mode: when no step is with a worker, moves the engine's clock to its next timer and
/// rings it (what a test environment with time skipping does while it waits). Admin scope,
/// every namespace.
#[utoipa::path(post, path = "/v1/clock/skip", tag = "clock", operation_id = "skip_clock",
    responses(
        (status = 200, body = Skipped),
        (status = 403, description = "`forbidden`: not an admin token of every namespace", body = ErrorBody),
        (status = 409, description = "`test_clock_off`: this orchestrator is not in test mode", body = ErrorBody),
    ))]
pub(super) async fn skip(
    State(shared): State<Shared>,
    caller: Caller,
) -> Result<Json<Skipped>, Error> {
    test_mode(&shared, &caller)?;
    let skipped = shared.store.skip_clock().await?;
    if skipped.skipped {
        ring(&shared).await?;
    }
    Ok(Json(skipped))
}

/// The clock moves only in test mode, for a caller of every namespace: it reaches every
/// timer of every task.
fn test_mode(shared: &Shared, caller: &Caller) -> Result<(), Error> {
    caller.require_unscoped("moving the engine's clock")?;
    if shared.store.clock().is_test() {
        return Ok(());
    }
    Err(Error::new(
        StatusCode::CONFLICT,
        "test_clock_off",
        "the engine's clock moves only in test mode (`tasker-orchestrator test-env`, \
         docs/testing.md); this orchestrator runs on the wall clock",
    ))
}

/// After the clock moved, before answering: the retries now due go out (their in-process
/// timers count the wall clock) and every other timer now due rings (waits end, tasks start,
/// deadlines pass, schedules fire), so the test sees their effects as soon as it is answered.
async fn ring(shared: &Shared) -> Result<(), Error> {
    crate::sweeper::retry_due(shared).await?;
    crate::timers::pass(shared).await;
    Ok(())
}
