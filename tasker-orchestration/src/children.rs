//! Child workflows: the orchestrator holds a child step (`tasker_hold`) and starts its child
//! task instead of sending it to a worker. The executor hands this module the child steps a
//! commit dispatched ([`ChildStep`]); each child is created with the idempotency key
//! `child:<step>:<attempt>` and linked to its step in one transaction (`tasker_create_tasks`),
//! so a crash before that commit leaves the step to the sweeper, which dispatches it again and
//! so starts it again, and a crash after it finds the same child: exactly one child per
//! attempt. The child's end wakes the step (`tasker_task_ended`), and the timer
//! completes or fails it (`tasker_wake`).

use serde_json::{Map, Value, json};
use uuid::Uuid;

use tasker_shared::StepResult;
use tasker_shared::compose::ParentCancel;
use tasker_shared::flow::Priority;

use crate::effects::{ChildStep, Effects};
use crate::metrics as m;
use crate::reach::Reach;
use crate::shared::Shared;
use crate::store::{self, ChildStart, NewTask, ParentLink};

/// Why a child could not be started: the step fails for good with this code.
struct Refusal {
    code: &'static str,
    message: String,
}

fn refuse<T>(code: &'static str, message: String) -> Result<T, Refusal> {
    Err(Refusal { code, message })
}

/// Starts the children of child steps just dispatched. Returns what those starts left to do
/// (the children's root steps) and the steps that cannot start a child, failed for good.
pub async fn start(shared: &Shared, steps: &[ChildStep]) -> (Effects, Vec<StepResult>) {
    let ids: Vec<(Uuid, i32)> = steps
        .iter()
        .map(|c| (c.step_id, c.attempt as i32))
        .collect();
    let mut effects = Effects::default();
    let mut failures = Vec::new();
    let starts = match shared.store.child_starts(&ids).await {
        Ok(starts) => starts,
        Err(e) => {
            tracing::warn!(error = %e, steps = ids.len(), "cannot read child steps; the sweeper publishes them again");
            return (effects, failures);
        }
    };
    for c in starts {
        match start_one(shared, &c).await {
            Ok(Ok(Some(e))) => effects.merge(e),
            Ok(Ok(None)) => {}
            Ok(Err(r)) => failures.push(StepResult::permanent_failure(
                c.task_id,
                c.step_id,
                c.attempt as u32,
                r.code,
                r.message,
                "orchestrator",
            )),
            Err(e) => tracing::warn!(step = %c.step_id, error = %e,
                "cannot start a child task; the sweeper publishes its step again"),
        }
    }
    (effects, failures)
}

/// A child that passed every check, ready to create.
struct Checked {
    entry: std::sync::Arc<crate::catalog::Entry>,
    context: Value,
    /// `namespace/name@version`, for messages.
    key: String,
    depth: i32,
}

/// Starts one child: its pinned template, its context mapped from the parent's, within the
/// depth bound and the tree's budget, on behalf of the tree's token.
async fn start_one(
    shared: &Shared,
    c: &ChildStart,
) -> Result<Result<Option<Effects>, Refusal>, store::Error> {
    let checked = match check(shared, c).await? {
        Ok(checked) => checked,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let children = match shared.catalog.pin_children(&checked.entry.loaded).await {
        Ok(pins) => pins,
        Err(crate::catalog::PinError::Store(e)) => return Err(e),
        Err(e) => return Ok(refuse("unknown_child_template", e.to_string())),
    };
    let on_parent_cancel = match c.spec["on_parent_cancel"].as_str() {
        Some("abandon") => ParentCancel::Abandon,
        _ => ParentCancel::Cancel,
    };
    let Checked {
        entry,
        context,
        key,
        depth,
    } = checked;
    let budget = shared.config.orchestrator.max_child_tasks;
    let new = NewTask {
        template_id: entry.id,
        template: &entry.loaded,
        context,
        idempotency_key: Some(format!("child:{}:{}", c.step_id, c.attempt)),
        run_at: None,
        children,
        parent: Some(ParentLink {
            task_id: c.task_id,
            step_id: c.step_id,
            attempt: c.attempt,
            depth,
            root: c.root,
            on_parent_cancel,
        }),
        // The child template's priority, else its parent's.
        priority: entry
            .loaded
            .template
            .priority
            .unwrap_or(Priority::from_rank(c.priority)),
        token_id: c.token_id,
        controls: Default::default(),
        deadline: None,
    };
    let created = match shared.store.create_child(new, budget).await {
        Ok(Some(created)) => created,
        Ok(None) => {
            return Ok(refuse(
                "child_budget_exceeded",
                format!(
                    "starting {key} would put more than {budget} tasks below task {} \
                     (orchestrator.max_child_tasks; does the template start itself?)",
                    c.root
                ),
            ));
        }
        Err(store::Error::Limits(e)) => return Ok(refuse(e.code, e.message)),
        Err(e) => return Err(e),
    };
    if created.created {
        ::metrics::counter!(m::CHILDREN_STARTED.name).increment(1);
    }
    Ok(Ok((!created.parent_gone).then_some(created.effects)))
}

/// Checks a child before it starts: its depth, its context (mapped from the parent's and
/// checked against its template's schema), its template, and the tree's token, which must still
/// be live and cover everything this child reaches (its template may be a version registered
/// since the tree began).
async fn check(shared: &Shared, c: &ChildStart) -> Result<Result<Checked, Refusal>, store::Error> {
    let spec = &c.spec;
    let text = |k: &str| spec[k].as_str().unwrap_or_default();
    let key = format!("{}/{}@{}", text("namespace"), text("name"), text("version"));
    let max = shared.config.orchestrator.max_child_depth;
    let depth = c.depth + 1;
    if depth as u32 > max {
        return Ok(refuse(
            "child_depth_exceeded",
            format!(
                "starting {key} would nest workflows {depth} deep; orchestrator.max_child_depth \
                 is {max} (does the template start itself?)"
            ),
        ));
    }
    let context = match child_context(spec, &c.context, &c.parents) {
        Ok(context) => context,
        Err(pointer) => {
            return Ok(refuse(
                "child_context_missing",
                format!("the child context's {pointer} resolves to nothing"),
            ));
        }
    };
    let Some(entry) = shared
        .catalog
        .get(text("namespace"), text("name"), Some(text("version")))
        .await?
    else {
        return Ok(refuse(
            "unknown_child_template",
            format!("{key} is not registered"),
        ));
    };
    if let Err(problems) = entry.loaded.check_context(&context) {
        return Ok(refuse(
            "child_context_invalid",
            format!(
                "the child context does not match the schema of {key}: {}",
                problems.join("; ")
            ),
        ));
    }
    let judged =
        Reach::judge_saved(&shared.catalog, &shared.store, &entry.loaded, c.token_id).await?;
    if let Err(why) = judged {
        return Ok(refuse(
            "child_not_permitted",
            format!("starting {key}: {why}"),
        ));
    }
    Ok(Ok(Checked {
        entry,
        context,
        key,
        depth,
    }))
}

/// The child's context: the parent's whole, one value read by a pointer, or a map of fields
/// read by pointers, from `{"context": …, "parents": {…}}`. Err: the pointer that read nothing.
fn child_context(spec: &Value, context: &Value, parents: &Value) -> Result<Value, String> {
    let mapping = &spec["context"];
    if mapping.is_null() {
        return Ok(context.clone());
    }
    let source = json!({ "context": context, "parents": parents });
    let read = |pointer: &str| {
        source
            .pointer(pointer)
            .cloned()
            .ok_or_else(|| pointer.to_owned())
    };
    if let Some(pointer) = mapping["pointer"].as_str() {
        return read(pointer);
    }
    let mut fields = Map::new();
    for (k, p) in mapping["pointers"].as_object().into_iter().flatten() {
        fields.insert(k.clone(), read(p.as_str().unwrap_or_default())?);
    }
    Ok(Value::Object(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_mapped_by_pointers_and_a_missing_one_is_named() {
        let ctx = json!({"order": {"id": 7}, "n": 2});
        let parents = json!({"price": {"total": 12.5}});
        let whole = json!({"context": null});
        assert_eq!(child_context(&whole, &ctx, &parents), Ok(ctx.clone()));
        let one = json!({"context": {"pointer": "/parents/price"}});
        assert_eq!(
            child_context(&one, &ctx, &parents),
            Ok(json!({"total": 12.5}))
        );
        let fields = json!({"context": {"pointers": {"id": "/context/order/id", "t": "/parents/price/total"}}});
        assert_eq!(
            child_context(&fields, &ctx, &parents),
            Ok(json!({"id": 7, "t": 12.5}))
        );
        let missing = json!({"context": {"pointers": {"x": "/context/nope"}}});
        assert_eq!(
            child_context(&missing, &ctx, &parents),
            Err("/context/nope".to_owned())
        );
    }
}
