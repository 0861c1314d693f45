//! Read models for the API: tasks, their steps with results and timings, and their history.

use chrono::{DateTime, Utc};
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::FromRow;
use uuid::Uuid;

use super::{Result, Store};

/// A step with its result, error and per-hop timings.
pub use tasker_shared::api::Step as StepView;
/// A task as the API shows it.
pub use tasker_shared::api::Task as TaskView;
use tasker_shared::api::Transition;

/// Filter and page of `list_tasks`. Tasks come newest first; `before` is the last id of the
/// previous page (ids are UUID v7, so they sort by creation time).
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    pub state: Option<String>,
    pub namespace: Option<String>,
    /// Only namespaces matching this PostgreSQL regular expression (a scoped token's).
    pub namespaces: Option<String>,
    /// The template's name.
    pub name: Option<String>,
    /// Only the children of this task.
    pub parent: Option<Uuid>,
    pub before: Option<Uuid>,
    pub limit: i64,
    pub created_after: Option<DateTime<Utc>>,
    pub created_before: Option<DateTime<Utc>>,
    /// Only tasks whose context contains this JSON (`@>`).
    pub context: Option<Value>,
    /// Only tasks whose id lies in this range, both ends included (an id prefix's first and
    /// last id: a range of the primary key).
    pub id_range: Option<(Uuid, Uuid)>,
    /// Only the tasks with this idempotency key (one per namespace).
    pub idempotency_key: Option<String>,
}

const TASK_COLUMNS: &str = "t.id, t.namespace, t.name, t.version, t.state, t.context,
    t.idempotency_key,
    CASE WHEN t.state IN ('scheduled', 'running')
         THEN t.open_steps - COALESCE((SELECT sum(n)::int FROM task_tallies y WHERE y.task_id = t.id), 0)
         ELSE (SELECT count(*)::int FROM steps x WHERE x.task_id = t.id AND x.state = 'enqueued')
    END AS open_steps, t.error, t.created_at, t.completed_at, t.run_at,
    t.parent_task_id, t.parent_step_id, t.depth,
    (ARRAY['high', 'normal', 'low'])[t.priority + 1] AS priority,
    CASE WHEN t.deadline_ms IS NOT NULL THEN jsonb_build_object(
        'within_ms', t.deadline_ms, 'action', t.deadline_action,
        'at', CASE WHEN t.state = 'running' THEN t.deadline_at END,
        'passed_at', t.deadline_passed_at) END AS deadline,
    EXTRACT(EPOCH FROM (t.completed_at - t.created_at))::float8 * 1000 AS duration_ms";

/// The `WHERE` of a list of tasks, its arguments `$1` to `$12` ([`bind_filter`]).
fn task_where(f: &TaskFilter) -> String {
    let context = if f.context.is_some() {
        "t.context @> $9"
    } else {
        "$9::jsonb IS NULL"
    };
    format!(
        "($1::text IS NULL OR t.state = $1)
           AND ($2::text IS NULL OR t.namespace = $2)
           AND ($3::uuid IS NULL OR t.id < $3)
           AND ($4::text IS NULL OR t.name = $4)
           AND ($5::text IS NULL OR t.namespace ~ $5)
           AND ($6::uuid IS NULL OR t.parent_task_id = $6)
           AND ($7::timestamptz IS NULL OR t.created_at >= $7)
           AND ($8::timestamptz IS NULL OR t.created_at < $8)
           AND ($10::uuid IS NULL OR t.id BETWEEN $10 AND $11)
           AND ($12::text IS NULL OR t.idempotency_key = $12)
           AND {context}"
    )
}

/// Binds the arguments of [`task_where`].
fn bind_filter<'q, T>(
    q: sqlx::query::QueryAs<'q, sqlx::Postgres, T, sqlx::postgres::PgArguments>,
    f: &TaskFilter,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, T, sqlx::postgres::PgArguments> {
    q.bind(f.state.clone())
        .bind(f.namespace.clone())
        .bind(f.before)
        .bind(f.name.clone())
        .bind(f.namespaces.clone())
        .bind(f.parent)
        .bind(f.created_after)
        .bind(f.created_before)
        .bind(f.context.clone())
        .bind(f.id_range.map(|(first, _)| first))
        .bind(f.id_range.map(|(_, last)| last))
        .bind(f.idempotency_key.clone())
}

impl Store {
    /// A task with its result (once complete) and the children its child steps started, in one
    /// query (a task has children only if `has_children`, so others cost no lookup).
    pub async fn task(&self, id: Uuid) -> Result<Option<TaskView>> {
        #[derive(FromRow)]
        struct Row {
            #[sqlx(flatten)]
            task: TaskView,
            children: Option<sqlx::types::Json<Vec<tasker_shared::api::ChildLink>>>,
        }
        let sql = format!(
            "SELECT {TASK_COLUMNS},
                CASE WHEN t.state = 'complete' THEN tasker_task_result(t.id) END AS result,
                CASE WHEN t.has_children THEN
                  (SELECT jsonb_agg(jsonb_build_object(
                              'task_id', c.id, 'step_id', s.id, 'step_name', s.name,
                              'attempt', split_part(c.idempotency_key, ':', 3)::int,
                              'state', c.state, 'namespace', c.namespace, 'name', c.name,
                              'version', c.version) ORDER BY c.id)
                   FROM tasks c JOIN steps s ON s.id = c.parent_step_id
                   WHERE c.parent_task_id = t.id)
                END AS children
             FROM tasks t WHERE t.id = $1"
        );
        let row: Option<Row> = sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|r| TaskView {
            children: Some(r.children.map(|c| c.0).unwrap_or_default()),
            ..r.task
        }))
    }

    /// A page of tasks, within the list timeout. The context filter is written into the
    /// statement only when given, so that its plan (generic: `plan_cache_mode`) can use the
    /// GIN index of `tasks.context` (migration 0020).
    pub async fn tasks(&self, f: &TaskFilter) -> Result<Vec<TaskView>> {
        let sql = format!(
            "SELECT {TASK_COLUMNS}, NULL::jsonb AS result FROM tasks t WHERE {}
             ORDER BY t.id DESC LIMIT $13",
            task_where(f)
        );
        self.list(bind_filter(sqlx::query_as(&sql), f).bind(f.limit))
            .await
    }

    /// How many tasks of each state the filter matches, its `state`, `before` and `limit` left
    /// out (what the list's pages hold in all), within the list timeout.
    pub async fn task_counts(&self, f: &TaskFilter) -> Result<Vec<(String, i64)>> {
        let all = TaskFilter {
            state: None,
            before: None,
            ..f.clone()
        };
        let sql = format!(
            "SELECT t.state, count(*) FROM tasks t WHERE {} GROUP BY t.state",
            task_where(&all)
        );
        self.list(bind_filter(sqlx::query_as(&sql), &all)).await
    }

    /// Whether task `id` has a step routed to a namespace matching `regex` (a scoped token's).
    pub async fn task_has_step_in(&self, id: Uuid, regex: &str) -> Result<bool> {
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM steps WHERE task_id = $1 AND namespace ~ $2)",
        )
        .bind(id)
        .bind(regex)
        .fetch_one(self.pool())
        .await?)
    }

    /// The namespace of task `id`, if there is one.
    pub async fn task_namespace(&self, id: Uuid) -> Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT namespace FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(self.pool())
                .await?,
        )
    }

    /// One page of a task's steps in id order after `after`, with the cursor of the next page
    /// if there may be one. A page holds at most `limit` steps and ends with the one whose
    /// result and error reach `max_bytes` of JSON, so a 100,000-step task is read in bounded
    /// pieces.
    pub async fn steps(
        &self,
        task_id: Uuid,
        after: Option<Uuid>,
        limit: i64,
        max_bytes: usize,
    ) -> Result<(Vec<StepView>, Option<Uuid>)> {
        #[derive(FromRow)]
        struct Row {
            #[sqlx(flatten)]
            step: StepView,
            read: i64,
        }
        let rows: Vec<Row> = sqlx::query_as(
            "WITH page AS (
                 SELECT id, name, handler, step_type,
                        CASE WHEN tasker_held(s) THEN 'waiting'
                             WHEN state = 'enqueued' AND running_attempt = attempt THEN 'running'
                             ELSE state END AS state,
                        attempt,
                        attempt_base + max_attempts AS max_attempts, result, error,
                        worker, created_at, dispatched_at, started_at, finished_at, processed_at,
                        next_attempt_at,
                        CASE WHEN step_type = 'wait' THEN jsonb_build_object(
                            'kind', wait->>'kind',
                            'signal', CASE WHEN wait->>'kind' = 'signal' THEN wait->>'signal' END,
                            'event', wait->>'event',
                            'until', CASE WHEN state = 'enqueued' THEN wake_at END,
                            'on_timeout', wait->>'on_timeout') END AS wait,
                        COALESCE(namespace, (SELECT t.namespace FROM tasks t WHERE t.id = $1))
                            AS namespace,
                        CASE WHEN step_type = 'child' THEN jsonb_build_object(
                            'namespace', child->>'namespace', 'name', child->>'name',
                            'version', child->>'version', 'task_id', child_task_id,
                            'on_parent_cancel', child->>'on_parent_cancel') END AS child,
                        CASE WHEN state = 'throttled' THEN throttle END AS throttle, limits,
                        octet_length(COALESCE(result::text, '')) + octet_length(COALESCE(error::text, ''))
                            AS bytes
                 FROM steps s WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3
             ), sized AS (
                 SELECT *, row_number() OVER w AS n, count(*) OVER () AS read,
                        COALESCE(sum(bytes) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING
                                                     AND 1 PRECEDING), 0) AS before
                 FROM page WINDOW w AS (ORDER BY id)
             )
             SELECT * FROM sized WHERE n = 1 OR before < $4 ORDER BY id",
        )
        .bind(task_id)
        .bind(after.unwrap_or(Uuid::nil()))
        .bind(limit)
        .bind(i64::try_from(max_bytes).unwrap_or(i64::MAX))
        .fetch_all(self.pool())
        .await?;
        let read = rows.first().map_or(0, |r| r.read);
        let kept = rows.len() as i64;
        let steps: Vec<StepView> = rows.into_iter().map(|r| r.step).collect();
        let next = next_cursor(kept, read, limit, steps.last().map(|s| s.id));
        Ok((steps, next))
    }

    /// The id of a task's step, named by id or by name; `None` if the task has no such step.
    pub async fn step_in_task(
        &self,
        task_id: Uuid,
        id: Option<Uuid>,
        name: Option<&str>,
    ) -> Result<Option<Uuid>> {
        Ok(
            sqlx::query_scalar(
                "SELECT id FROM steps WHERE task_id = $1 AND (id = $2 OR name = $3)",
            )
            .bind(task_id)
            .bind(id)
            .bind(name)
            .fetch_optional(self.pool())
            .await?,
        )
    }

    /// Transition history of a task, oldest first; `by` names who asked for a transition made
    /// by hand (a repair).
    pub async fn history(&self, task_id: Uuid) -> Result<Vec<Transition>> {
        Ok(self.history_tail(task_id, i64::MAX).await?.0)
    }

    /// The last `limit` transitions of a task's history, oldest first, and the id of the
    /// newest (the task's version as of this read, as [`Store::task_version`] gives it).
    pub async fn history_tail(
        &self,
        task_id: Uuid,
        limit: i64,
    ) -> Result<(Vec<Transition>, Option<i64>)> {
        #[derive(FromRow)]
        struct Row {
            id: i64,
            #[sqlx(flatten)]
            transition: Transition,
        }
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, step, \"from\", \"to\", attempt, reason, \"by\", at FROM (
                 SELECT h.id, s.name AS step, h.from_state AS \"from\", h.to_state AS \"to\",
                        h.attempt, h.reason, h.actor AS \"by\", h.at
                 FROM transitions h LEFT JOIN steps s ON s.id = h.step_id
                 WHERE h.task_id = $1 ORDER BY h.id DESC LIMIT $2
             ) tail ORDER BY id",
        )
        .bind(task_id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        let version = rows.last().map(|r| r.id);
        Ok((rows.into_iter().map(|r| r.transition).collect(), version))
    }

    /// The id of a task's latest transition: it changes whenever the task or a step does.
    /// The versions of several tasks in one statement (each an index lookup of the task's latest
    /// transition), for the live view: `(task, version)` for each task given.
    pub async fn task_versions(&self, task_ids: &[Uuid]) -> Result<Vec<(Uuid, Option<i64>)>> {
        Ok(sqlx::query_as(
            "SELECT w.id, (SELECT max(t.id) FROM transitions t WHERE t.task_id = w.id)
             FROM unnest($1::uuid[]) AS w(id)",
        )
        .bind(task_ids)
        .fetch_all(self.pool())
        .await?)
    }

    pub async fn task_version(&self, task_id: Uuid) -> Result<Option<i64>> {
        Ok(
            sqlx::query_scalar("SELECT max(id) FROM transitions WHERE task_id = $1")
                .bind(task_id)
                .fetch_one(self.pool())
                .await?,
        )
    }

    /// One page of a step's parent results (what its message carries when it is small), in
    /// parent id order after `after`: a JSON object by step name, as PostgreSQL wrote it (a
    /// batchable parent's result can list 100,000 batches; it is passed through, never parsed
    /// here), and the cursor of the next page if there may be one. A page holds at most `limit`
    /// results and ends with the one that reaches `max_bytes` of JSON, so its size is bounded
    /// whatever the results. `None` if the task has no such step.
    pub async fn parent_results(
        &self,
        task_id: Uuid,
        step_id: Uuid,
        after: Option<Uuid>,
        limit: i64,
        max_bytes: usize,
    ) -> Result<Option<(Box<RawValue>, Option<Uuid>)>> {
        let exists: Option<i32> =
            sqlx::query_scalar("SELECT 1 FROM steps WHERE id = $1 AND task_id = $2")
                .bind(step_id)
                .bind(task_id)
                .fetch_optional(self.pool())
                .await?;
        if exists.is_none() {
            return Ok(None);
        }
        let (page, read, kept, last): (String, i64, i64, Option<Uuid>) = sqlx::query_as(
            "WITH page AS (
                 SELECT e.parent_id, p.name,
                        COALESCE((CASE p.state WHEN 'completed' THEN p.result
                                  ELSE jsonb_build_object('failed', true, 'error', p.error)
                                  END)::text, 'null') AS body
                 FROM step_edges e JOIN steps p ON p.id = e.parent_id
                 WHERE e.child_id = $1 AND e.parent_id > $2
                   AND (p.state = 'completed' OR (p.state = 'failed' AND p.on_failure = 'continue'))
                 ORDER BY e.parent_id LIMIT $3
             ), sized AS (
                 SELECT parent_id, name, body, row_number() OVER w AS n,
                        COALESCE(sum(octet_length(body)) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING
                                                                  AND 1 PRECEDING), 0) AS before
                 FROM page WINDOW w AS (ORDER BY parent_id)
             )
             SELECT '{' || COALESCE(string_agg(to_json(name)::text || ':' || body, ','
                                               ORDER BY parent_id), '') || '}',
                    (SELECT count(*) FROM page), count(*),
                    (array_agg(parent_id ORDER BY parent_id DESC))[1]
             FROM sized WHERE n = 1 OR before < $4",
        )
        .bind(step_id)
        .bind(after.unwrap_or(Uuid::nil()))
        .bind(limit)
        .bind(i64::try_from(max_bytes).unwrap_or(i64::MAX))
        .fetch_one(self.pool())
        .await?;
        let next = next_cursor(kept, read, limit, last);
        let page = RawValue::from_string(page).map_err(|source| super::Error::Answer {
            function: "the parent results page query",
            source,
        })?;
        Ok(Some((page, next)))
    }
}

/// The cursor of the page after one that kept `kept` of the `read` rows it read (at most
/// `limit`), the last being `last`: more may follow a full page, or a page cut short by its
/// byte budget.
fn next_cursor(kept: i64, read: i64, limit: i64, last: Option<Uuid>) -> Option<Uuid> {
    (kept == limit || kept < read).then_some(last).flatten()
}
