//! The argument of `tasker_create_tasks`, one statement for any number of tasks: each template's
//! plan once (its steps' columns and edges), each task's row with its steps' ids and what its
//! creation made of them (limits, batch specs, pinned children, start controls), and how its
//! answer is read.

use serde_json::{Value, json};
use uuid::Uuid;

use tasker_shared::StepMessage;
use tasker_shared::plan::Plan;
use tasker_shared::template::Loaded;

use super::{BatchAnswer, Error, NewTask, Result, decode};
use crate::effects::Effects;

/// The JSON answer of `tasker_create_tasks`.
#[derive(serde::Deserialize)]
struct CreatedRows {
    tasks: Vec<BatchAnswer>,
    #[serde(default)]
    dispatch: Vec<StepMessage>,
    /// Roots with limits: the timed waits of those throttled, and those beyond the first page.
    #[serde(flatten)]
    claimed: super::results::Claimed,
    #[serde(default)]
    deferred: Vec<Uuid>,
    /// Roots the orchestrator holds: waits begun, children to start.
    #[serde(flatten)]
    held: super::results::HeldSteps,
    /// When the tasks start controls made or moved start.
    #[serde(default)]
    starts: Vec<chrono::DateTime<chrono::Utc>>,
}

/// Tasks to create in one `tasker_create_tasks` call, its one argument: each template's plan
/// once (its steps' columns and edges), and each task's row with its steps' ids and what its
/// creation made of them.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct CreateBatch {
    tasks: Vec<TaskRow>,
    plans: Vec<PlanRow>,
    /// Whether a task has a start control: only then does `tasker_start_controls` look.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    controlled: bool,
    /// Whether a task has a deadline: only then does `tasker_create_tasks` write them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deadlines: bool,
    /// The template of each plan, and its number of steps created.
    #[serde(skip)]
    planned: Vec<(Uuid, i32)>,
}

/// A task's row (`tasker_new_tasks`): `n` its position in the batch (1-based), `plan` its
/// template's plan (0-based).
#[derive(Debug, Clone, serde::Serialize)]
struct TaskRow {
    n: i32,
    id: Uuid,
    template_id: Uuid,
    namespace: String,
    name: String,
    version: String,
    context: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(flatten)]
    parent: Option<ParentRow>,
    priority: i16,
    steps: i32,
    /// The API token that created it, or its root's.
    #[serde(skip_serializing_if = "Option::is_none")]
    token_id: Option<i64>,
    plan: usize,
    /// Its steps' ids, by template step.
    step_ids: Vec<Uuid>,
    /// By template step, what the creation made of it beyond its template (none: nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<Vec<Option<Value>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_specs: Option<Vec<Option<Value>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    children: Option<Vec<Option<Value>>>,
    /// Its dedupe window (`tasker_start_controls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    debounce: Option<super::controls::DebounceRow>,
    /// Its deadline: how long it may run from its start, and its action then.
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    deadline_action: Option<&'static str>,
}

/// A child task's link to the step attempt that starts it.
#[derive(Debug, Clone, serde::Serialize)]
struct ParentRow {
    parent_task: Uuid,
    parent_step: Uuid,
    parent_attempt: i32,
    depth: i32,
    on_parent_cancel: &'static str,
    root_task_id: Uuid,
}

/// What a template's tasks are made of: its created steps' columns and their edges
/// (`tasker_insert_tasks`), by template step index.
#[derive(Debug, Clone, serde::Serialize)]
struct PlanRow {
    steps: Vec<StepRow>,
    edges: Vec<EdgeRow>,
}

/// An edge between two template steps.
#[derive(Debug, Clone, serde::Serialize)]
struct EdgeRow {
    p: usize,
    c: usize,
}

/// `Some(values)` when any is something.
fn any(values: Vec<Option<Value>>) -> Option<Vec<Option<Value>>> {
    values.iter().any(Option::is_some).then_some(values)
}

impl CreateBatch {
    /// Tasks added so far.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Whether a task of the batch has a start control (a dedupe window or a debounce).
    pub fn controlled(&self) -> bool {
        self.controlled
    }

    /// Adds `other`'s tasks after this batch's, sharing the plans of templates both have;
    /// answers their positions here. A batch's tasks never depend on each other but by an
    /// idempotency key, which the statement settles in order like separate statements would.
    pub fn absorb(&mut self, other: &CreateBatch) -> std::ops::Range<usize> {
        let start = self.tasks.len();
        let plans: Vec<usize> = other
            .plans
            .iter()
            .zip(&other.planned)
            .map(|(plan, &(id, steps))| {
                if let Some(i) = self.planned.iter().position(|(t, _)| *t == id) {
                    return i;
                }
                self.plans.push(plan.clone());
                self.planned.push((id, steps));
                self.plans.len() - 1
            })
            .collect();
        for task in &other.tasks {
            let mut task = task.clone();
            task.n = self.tasks.len() as i32 + 1;
            task.plan = plans[task.plan];
            self.tasks.push(task);
        }
        self.controlled |= other.controlled;
        self.deadlines |= other.deadlines;
        start..self.tasks.len()
    }

    /// The plan of template `id`, made at its first task in the batch; and its steps created.
    fn plan(&mut self, id: Uuid, loaded: &Loaded) -> (usize, i32) {
        if let Some(i) = self.planned.iter().position(|(t, _)| *t == id) {
            return (i, self.planned[i].1);
        }
        let t = &loaded.template;
        let plan = Plan::new(loaded);
        let steps = plan
            .steps
            .iter()
            .map(|&i| StepRow::new(i, &t.steps[i], &t.namespace, plan.parent_count(i) as i32))
            .collect();
        let edges = plan.edges.iter().map(|&(p, c)| EdgeRow { p, c }).collect();
        self.plans.push(PlanRow { steps, edges });
        self.planned.push((id, plan.steps.len() as i32));
        (self.plans.len() - 1, plan.steps.len() as i32)
    }

    /// Plans `new` into the batch; refused, with nothing added, when its context lacks a key
    /// its limits read (or has one too long).
    pub fn add(
        &mut self,
        new: NewTask<'_>,
    ) -> std::result::Result<(), tasker_shared::flow::KeyError> {
        let t = &new.template.template;
        let limits = t
            .steps
            .iter()
            .map(|s| tasker_shared::template::resolve_limits(t, s, &new.context))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let (plan, steps) = self.plan(new.template_id, new.template);
        // A batchable step's spec carries its batch worker's limits, for the batches it makes.
        let batch_specs = (0..t.steps.len())
            .map(|i| {
                Plan::batch_spec(new.template, i).map(|mut spec| {
                    if let Some(l) = t
                        .steps
                        .iter()
                        .position(|w| Some(w.name.as_str()) == spec["name"].as_str())
                        .and_then(|w| limits[w].clone())
                    {
                        spec["limits"] = l;
                    }
                    spec
                })
            })
            .collect();
        let parent = new.parent.map(|p| ParentRow {
            parent_task: p.task_id,
            parent_step: p.step_id,
            parent_attempt: p.attempt,
            depth: p.depth,
            on_parent_cancel: p.on_parent_cancel.as_str(),
            root_task_id: p.root,
        });
        let (ttl_ms, debounce) = new.controls.rows();
        self.controlled |= ttl_ms.is_some() || debounce.is_some();
        // The request's deadline, else its template's (checked when it was registered).
        let deadline = new
            .deadline
            .or_else(|| t.deadline.as_ref().and_then(|d| d.check().ok()));
        self.deadlines |= deadline.is_some();
        self.tasks.push(TaskRow {
            n: self.tasks.len() as i32 + 1,
            id: Uuid::now_v7(),
            template_id: new.template_id,
            namespace: t.namespace.clone(),
            name: t.name.clone(),
            version: t.version.clone(),
            context: new.context,
            key: new.idempotency_key,
            run_at: new.run_at,
            parent,
            priority: new.priority.rank(),
            steps,
            token_id: new.token_id,
            plan,
            step_ids: t.steps.iter().map(|_| Uuid::now_v7()).collect(),
            limits: any(limits),
            batch_specs: any(batch_specs),
            children: any(new.children),
            ttl_ms,
            debounce,
            deadline_ms: deadline.map(|d| d.within_ms()),
            deadline_action: deadline.map(|d| d.action.as_str()),
        });
        Ok(())
    }

    /// Creates the batch's tasks in one statement on `conn`.
    pub(super) async fn run(
        &self,
        conn: &mut sqlx::PgConnection,
    ) -> Result<(Vec<BatchAnswer>, Effects)> {
        // With the engine's clock, which a later start's alarm is armed by.
        let (answer, now): (Value, chrono::DateTime<chrono::Utc>) =
            sqlx::query_as("SELECT tasker_create_tasks($1), tasker_clock()")
                .bind(sqlx::types::Json(&self))
                .fetch_one(conn)
                .await?;
        let rows: CreatedRows = decode("tasker_create_tasks", answer)?;
        if rows.tasks.len() != self.tasks.len() {
            return Err(Error::Answer {
                function: "tasker_create_tasks",
                source: serde::de::Error::custom(format!(
                    "{} tasks answered for {}",
                    rows.tasks.len(),
                    self.tasks.len()
                )),
            });
        }
        let mut created = Vec::new();
        let mut alarms = Vec::new();
        for (a, task) in rows.tasks.iter().zip(&self.tasks) {
            if a.created {
                // A task that starts later: look at the timers when its time comes; one that
                // runs now with a deadline, when that passes.
                let later = task.run_at.and_then(|at| (at - now).to_std().ok());
                alarms.extend(later);
                if later.is_none() {
                    alarms.extend(task.deadline_ms.map(|ms| {
                        std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
                    }));
                }
                created.push(task.namespace.clone());
            }
        }
        // And when throttled roots may start, and tasks that start controls made or moved.
        alarms.extend(rows.claimed.alarms());
        alarms.extend(
            rows.starts
                .iter()
                .filter_map(|at| (*at - now).to_std().ok()),
        );
        let mut effects = Effects {
            dispatch: rows.dispatch,
            deferred: rows.deferred,
            throttle_waits: rows.claimed.waits(),
            created,
            alarms,
            ..Effects::default()
        };
        rows.held.into_effects(&mut effects);
        Ok((rows.tasks, effects))
    }
}

/// A step's columns from its template (`tasker_insert_tasks`): `i` its template index.
#[derive(Debug, Clone, serde::Serialize)]
struct StepRow {
    i: usize,
    name: String,
    handler: String,
    step_type: String,
    branches: Value,
    max_attempts: i32,
    backoff: String,
    base_ms: i64,
    max_ms: i64,
    timeout_ms: i64,
    queue_timeout_ms: Option<i64>,
    parents: i32,
    on_failure: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    wait: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
}

impl StepRow {
    fn new(
        i: usize,
        s: &tasker_shared::StepTemplate,
        template_namespace: &str,
        parents: i32,
    ) -> StepRow {
        // Bounded by template validation (30 days); saturating all the same.
        let ms = |seconds: u64| seconds.saturating_mul(1000).min(i64::MAX as u64) as i64;
        StepRow {
            i,
            name: s.name.clone(),
            handler: s.engine_handler().to_owned(),
            step_type: s.engine_type().as_str().to_owned(),
            branches: json!(s.branches),
            // A child step's failure is its child's, for good: one attempt (a repair starts
            // another).
            max_attempts: if s.child.is_some() {
                1
            } else {
                s.retry.max_attempts as i32
            },
            backoff: s.retry.backoff.as_str().to_owned(),
            base_ms: s.retry.base_ms as i64,
            max_ms: s.retry.max_ms as i64,
            timeout_ms: ms(s.timeout_seconds),
            queue_timeout_ms: tasker_shared::template::queue_timeout_seconds(s, template_namespace)
                .map(ms),
            parents,
            on_failure: s.on_failure.as_str().to_owned(),
            wait: s.engine_wait(),
            // The task's own namespace is stored as none, so most steps store nothing.
            namespace: s.namespace.clone().filter(|ns| ns != template_namespace),
        }
    }
}
