//! The workers registry: each worker reports itself (what it serves) at start and every
//! heartbeat, and says when it leaves. A worker is live while it reported within its last three
//! heartbeats; rows not seen for a day are deleted when another report comes.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use tasker_shared::api::{RunningStep, UnservedStep, WorkerInfo, WorkerReport};

use super::{Principal, Result, Store};

/// A worker's row is the reporting token's own: the same token by id (a row of the previous
/// release, with no id, by name until it expires).
const OWN_ROW: &str = "(workers.reported_by_token IS NOT DISTINCT FROM EXCLUDED.reported_by_token
     OR (workers.reported_by_token IS NULL
         AND workers.reported_by IS NOT DISTINCT FROM EXCLUDED.reported_by))";

const COLUMNS: &str = "id, name, language, version, host, pid, namespaces, handlers, concurrency,
    heartbeat_ms, started_at, last_seen_at,
    left_at IS NULL AND last_seen_at + make_interval(secs => 3 * heartbeat_ms / 1000.0)
        > clock_timestamp() AS live";

impl Store {
    /// Records a worker's report (creates or refreshes its row). `None` if the row was reported
    /// by another token (`by`: by id, so a token of the same name made later is another), which
    /// may not take it over.
    pub async fn report_worker(
        &self,
        id: Uuid,
        r: &WorkerReport,
        by: Option<&Principal>,
    ) -> Result<Option<WorkerInfo>> {
        sqlx::query(
            "DELETE FROM workers WHERE last_seen_at < clock_timestamp() - interval '1 day'",
        )
        .execute(self.pool())
        .await?;
        let sql = format!(
            "INSERT INTO workers (id, name, language, version, host, pid, namespaces, handlers,
                                  concurrency, heartbeat_ms, started_at, last_seen_at, reported_by,
                                  reported_by_token)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, clock_timestamp(), $12, $13)
             ON CONFLICT (id) DO UPDATE SET
                 name = EXCLUDED.name, language = EXCLUDED.language, version = EXCLUDED.version,
                 host = EXCLUDED.host, pid = EXCLUDED.pid, namespaces = EXCLUDED.namespaces,
                 handlers = EXCLUDED.handlers, concurrency = EXCLUDED.concurrency,
                 heartbeat_ms = EXCLUDED.heartbeat_ms, started_at = EXCLUDED.started_at,
                 last_seen_at = EXCLUDED.last_seen_at, left_at = NULL
             WHERE {OWN_ROW}
             RETURNING {COLUMNS}"
        );
        Ok(sqlx::query_as(&sql)
            .bind(id)
            .bind(&r.name)
            .bind(&r.language)
            .bind(&r.version)
            .bind(&r.host)
            .bind(r.pid)
            .bind(&r.namespaces)
            .bind(&r.handlers)
            .bind(r.concurrency)
            .bind(r.heartbeat_ms)
            .bind(r.started_at)
            .bind(by.map(|p| p.name.as_str()))
            .bind(by.map(|p| p.id))
            .fetch_optional(self.pool())
            .await?)
    }

    /// Marks a worker gone (it stopped). False if there is no such worker of `by`'s.
    pub async fn leave_worker(&self, id: Uuid, by: Option<&Principal>) -> Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE workers SET left_at = clock_timestamp()
             WHERE id = $1 AND {}",
            OWN_ROW
                .replace("EXCLUDED.reported_by_token", "$3")
                .replace("EXCLUDED.reported_by", "$2")
        ))
        .bind(id)
        .bind(by.map(|p| p.name.as_str()))
        .bind(by.map(|p| p.id))
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records that worker `id` (of `by`'s) runs these step attempts: each still `enqueued` at
    /// that attempt, of a namespace the worker serves and `covers` matches (`None`: every
    /// namespace), is marked running on it since when it says, with a `running` transition in
    /// its history. Returns how many were marked, and the steps (of those namespaces) whose
    /// attempt is over; the others are left as they are.
    pub async fn record_running(
        &self,
        id: Uuid,
        by: Option<&Principal>,
        covers: Option<&str>,
        steps: &[RunningStep],
    ) -> Result<Option<(u64, Vec<Uuid>)>> {
        let own = OWN_ROW
            .replace("workers.", "w.")
            .replace("EXCLUDED.reported_by_token", "$3")
            .replace("EXCLUDED.reported_by", "$2");
        let found: Option<String> = sqlx::query_scalar(&format!(
            "SELECT name FROM workers w WHERE id = $1 AND {own}"
        ))
        .bind(id)
        .bind(by.map(|p| p.name.as_str()))
        .bind(by.map(|p| p.id))
        .fetch_optional(self.pool())
        .await?;
        if found.is_none() {
            return Ok(None);
        }
        let ids: Vec<Uuid> = steps.iter().map(|s| s.step_id).collect();
        let attempts: Vec<i32> = steps.iter().map(|s| s.attempt).collect();
        let since: Vec<DateTime<Utc>> = steps.iter().map(|s| s.started_at).collect();
        let (marked, over): (i64, Vec<Uuid>) = sqlx::query_as(
            "WITH seen AS (
                 SELECT s.id, x.attempt, x.started_at, w.name,
                        s.state = 'enqueued' AND s.attempt = x.attempt AS open
                 FROM unnest($2::uuid[], $3::int[], $4::timestamptz[]) AS x(id, attempt, started_at)
                 JOIN steps s ON s.id = x.id
                 JOIN tasks t ON t.id = s.task_id
                 JOIN workers w ON w.id = $1
                 WHERE COALESCE(s.namespace, t.namespace) = ANY (w.namespaces)
                   AND ($5::text IS NULL OR COALESCE(s.namespace, t.namespace) ~ $5)
             ), marked AS (
                 UPDATE steps s SET running_attempt = x.attempt, started_at = x.started_at,
                                    worker = x.name
                 FROM seen x
                 WHERE s.id = x.id AND x.open AND s.attempt = x.attempt AND s.state = 'enqueued'
                   AND (s.running_attempt IS DISTINCT FROM x.attempt
                        OR s.worker IS DISTINCT FROM x.name)
                 RETURNING s.task_id, s.id, s.attempt, x.name
             ), noted AS (
                 INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason)
                 SELECT task_id, id, 'enqueued', 'running', attempt, 'on worker ' || name
                 FROM marked
             )
             SELECT (SELECT count(*) FROM marked),
                    COALESCE((SELECT array_agg(id) FROM seen WHERE NOT open), '{}')",
        )
        .bind(id)
        .bind(&ids)
        .bind(&attempts)
        .bind(&since)
        .bind(covers)
        .fetch_one(self.pool())
        .await?;
        Ok(Some((u64::try_from(marked).unwrap_or(0), over)))
    }

    /// Marks the steps waiting for a worker that no live worker serves (`Step::unserved`).
    pub async fn flag_unserved(&self, steps: &mut [tasker_shared::api::Step]) -> Result<()> {
        let waiting = |s: &tasker_shared::api::Step| {
            s.state == "enqueued" && !matches!(s.step_type.as_str(), "wait" | "child")
        };
        if !steps.iter().any(waiting) {
            return Ok(());
        }
        let served = Served::new(&self.workers(false).await?);
        for s in steps.iter_mut().filter(|s| waiting(s)) {
            s.unserved = !served.serves(&s.namespace, &s.handler);
        }
        Ok(())
    }

    /// Live workers, or with `all` every worker seen in the last day; by name.
    pub async fn workers(&self, all: bool) -> Result<Vec<WorkerInfo>> {
        let sql = format!(
            "SELECT * FROM (SELECT {COLUMNS} FROM workers) w WHERE $1 OR live
             ORDER BY name, id"
        );
        Ok(sqlx::query_as(&sql)
            .bind(all)
            .fetch_all(self.pool())
            .await?)
    }
}

/// What the live workers serve: whether one of them runs `handler` in `namespace`.
#[derive(Debug, Default)]
pub struct Served(std::collections::HashSet<(String, String)>);

impl Served {
    pub fn new(workers: &[WorkerInfo]) -> Served {
        Served(
            workers
                .iter()
                .filter(|w| w.live)
                .flat_map(|w| {
                    w.namespaces
                        .iter()
                        .flat_map(move |ns| w.handlers.iter().map(move |h| (ns.clone(), h.clone())))
                })
                .collect(),
        )
    }

    pub fn serves(&self, namespace: &str, handler: &str) -> bool {
        self.0.contains(&(namespace.to_owned(), handler.to_owned()))
    }

    /// The steps of `template` a worker runs whose namespace and handler none serves.
    pub fn unserved_steps(&self, template: &tasker_shared::TaskTemplate) -> Vec<UnservedStep> {
        template
            .steps
            .iter()
            .filter(|s| s.runs_on_worker())
            .filter_map(|s| {
                let ns = tasker_shared::template::step_namespace(s, &template.namespace);
                (!self.serves(ns, &s.handler)).then(|| UnservedStep {
                    step: s.name.clone(),
                    namespace: ns.to_owned(),
                    handler: s.handler.clone(),
                })
            })
            .collect()
    }
}
