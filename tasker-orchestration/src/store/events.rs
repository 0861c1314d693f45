//! Events in the store: a batch of events and the tasks their triggers start, written in one
//! transaction (no event is half-applied), and read back newest first.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;
use uuid::Uuid;

use tasker_shared::api::{ErrorDetail, Event, EventStart, EventTaker};

use super::{CreateBatch, NewTask, Result, Store};
use crate::effects::Effects;

/// An event to store, with what its triggers start.
#[derive(Debug)]
pub struct NewEvent<'a> {
    pub id: Uuid,
    pub namespace: String,
    pub name: String,
    pub key: Option<String>,
    pub sender_id: Option<String>,
    pub data: Value,
    pub token_id: Option<i64>,
    /// Per matching template (`namespace/name@version`): its task, or why it starts none.
    pub starts: Vec<(String, std::result::Result<NewTask<'a>, ErrorDetail>)>,
}

/// What storing one event did.
#[derive(Debug)]
pub enum Stored {
    /// Stored now, with the tasks it started.
    Created(Event),
    /// Its sender's id was sent before: that event, as stored then.
    Existing(Event),
}

#[derive(Clone, FromRow)]
struct Row {
    id: Uuid,
    namespace: String,
    name: String,
    key: Option<String>,
    sender_id: Option<String>,
    data: Value,
    received_at: DateTime<Utc>,
    started: Json<Vec<EventStart>>,
    taken_by: Option<Json<EventTaker>>,
}

impl From<Row> for Event {
    fn from(r: Row) -> Self {
        Event {
            id: r.id,
            namespace: r.namespace,
            name: r.name,
            key: r.key,
            sender_id: r.sender_id,
            data: r.data,
            received_at: r.received_at,
            started: r.started.0,
            taken_by: r.taken_by.map(|t| t.0),
        }
    }
}

/// An event's columns (the table named `e`), and the wait step that took it, if one did (a step
/// of its own namespace: waits take only those).
const COLUMNS: &str = "e.id, e.namespace, e.name, e.key, e.sender_id, e.data, e.received_at,
    e.started, (SELECT jsonb_build_object('task_id', s.task_id, 'step_id', s.id,
                                          'step', s.name, 'at', e.consumed_at)
                FROM steps s WHERE s.id = e.consumed_by) AS taken_by";

impl Store {
    /// Stores `events` and creates the tasks their triggers start, in one transaction. An event
    /// whose sender's id is stored already (or repeated earlier in the batch) starts nothing:
    /// the stored one answers. Answers each event in order, with what the commit leaves to do.
    pub async fn record_events(&self, events: Vec<NewEvent<'_>>) -> Result<(Vec<Stored>, Effects)> {
        let mut tx = self.pool.begin().await?;
        let inserted: Vec<Uuid> = sqlx::query_scalar(
            "INSERT INTO events (id, namespace, name, key, sender_id, data, token_id)
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[],
                                  $6::jsonb[], $7::bigint[])
             ON CONFLICT (namespace, sender_id) WHERE sender_id IS NOT NULL DO NOTHING
             RETURNING id",
        )
        .bind(events.iter().map(|e| e.id).collect::<Vec<_>>())
        .bind(
            events
                .iter()
                .map(|e| e.namespace.as_str())
                .collect::<Vec<_>>(),
        )
        .bind(events.iter().map(|e| e.name.as_str()).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.key.as_deref()).collect::<Vec<_>>())
        .bind(
            events
                .iter()
                .map(|e| e.sender_id.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(events.iter().map(|e| &e.data).collect::<Vec<_>>())
        .bind(events.iter().map(|e| e.token_id).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await?;
        let inserted: std::collections::HashSet<Uuid> = inserted.into_iter().collect();
        // The tasks of the events stored now, in one statement; each start's place in it.
        let mut batch = CreateBatch::default();
        let mut started: Vec<Vec<EventStart>> = Vec::with_capacity(events.len());
        let mut placed: Vec<(usize, usize)> = Vec::new();
        let mut stored = Vec::with_capacity(events.len());
        for (i, event) in events.into_iter().enumerate() {
            let mut starts = Vec::new();
            if inserted.contains(&event.id) {
                for (template, start) in event.starts {
                    let refused = match start.map(|task| batch.add(task)) {
                        Ok(Ok(())) => {
                            placed.push((i, starts.len()));
                            None
                        }
                        Ok(Err(e)) => Some(ErrorDetail {
                            code: e.code.to_string(),
                            message: e.message,
                            details: None,
                        }),
                        Err(detail) => Some(detail),
                    };
                    starts.push(EventStart {
                        template,
                        task_id: None,
                        debounced: false,
                        deduplicated: false,
                        refused,
                    });
                }
            }
            started.push(starts);
            stored.push((event.id, event.namespace, event.sender_id));
        }
        let mut effects = Effects::default();
        if !batch.is_empty() {
            let (answers, fx) = batch.run(&mut tx).await?;
            for ((i, j), answer) in placed.into_iter().zip(answers) {
                let start = &mut started[i][j];
                start.task_id = Some(answer.task_id);
                start.debounced = answer.debounced;
                // A key's task, whether kept or purged since.
                start.deduplicated = !answer.created && !answer.debounced;
            }
            effects = fx;
        }
        let (ids, starts): (Vec<Uuid>, Vec<Json<&Vec<EventStart>>>) = stored
            .iter()
            .zip(&started)
            .filter(|((id, ..), _)| inserted.contains(id))
            .map(|((id, ..), s)| (*id, Json(s)))
            .unzip();
        if delivered(&mut tx, &ids, &starts).await? {
            effects.alarms.push(std::time::Duration::ZERO);
        }
        let answers = answer(&mut tx, stored, &inserted).await?;
        tx.commit().await?;
        Ok((answers, effects))
    }

    /// A page of events, newest first: before event `before`, of `namespace` (or of the
    /// namespaces matching `namespaces`, a scoped token's), named `name`.
    pub async fn events(
        &self,
        namespace: Option<&str>,
        namespaces: Option<&str>,
        name: Option<&str>,
        before: Option<Uuid>,
        limit: i64,
    ) -> Result<Vec<Event>> {
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM events e
             WHERE ($1::text IS NULL OR e.namespace = $1)
               AND ($2::text IS NULL OR e.namespace ~ $2)
               AND ($3::text IS NULL OR e.name = $3) AND ($4::uuid IS NULL OR e.id < $4)
             ORDER BY e.id DESC LIMIT $5"
        ))
        .bind(namespace)
        .bind(namespaces)
        .bind(name)
        .bind(before)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(Event::from).collect())
    }

    pub async fn event(&self, id: Uuid) -> Result<Option<Event>> {
        let row: Option<Row> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM events e WHERE e.id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(Event::from))
    }
}

/// Records what each event stored now started, and gives the events to the event waits they
/// serve (`tasker_deliver_events`); whether any wait woke.
async fn delivered(
    tx: &mut sqlx::PgConnection,
    ids: &[Uuid],
    starts: &[Json<&Vec<EventStart>>],
) -> Result<bool> {
    sqlx::query(
        "UPDATE events e SET started = s.started
         FROM unnest($1::uuid[], $2::jsonb[]) AS s (id, started) WHERE e.id = s.id",
    )
    .bind(ids)
    .bind(starts)
    .execute(&mut *tx)
    .await?;
    let woken: Vec<Uuid> = sqlx::query_scalar("SELECT tasker_deliver_events($1)")
        .bind(ids)
        .fetch_one(&mut *tx)
        .await?;
    Ok(!woken.is_empty())
}

/// Each event as stored: the one stored now, or the one its sender's id names.
async fn answer(
    tx: &mut sqlx::PgConnection,
    stored: Vec<(Uuid, String, Option<String>)>,
    inserted: &std::collections::HashSet<Uuid>,
) -> Result<Vec<Stored>> {
    let cols = COLUMNS;
    let new: Vec<Uuid> = inserted.iter().copied().collect();
    let mut by_id: std::collections::HashMap<Uuid, Row> =
        sqlx::query_as::<_, Row>(&format!("SELECT {cols} FROM events e WHERE e.id = ANY($1)"))
            .bind(&new)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
    let repeats: Vec<(&str, &str)> = stored
        .iter()
        .filter(|(id, ..)| !inserted.contains(id))
        .filter_map(|(_, ns, sender)| Some((ns.as_str(), sender.as_deref()?)))
        .collect();
    let by_sender: std::collections::HashMap<(String, String), Row> = if repeats.is_empty() {
        Default::default()
    } else {
        sqlx::query_as::<_, Row>(&format!(
            "SELECT {cols} FROM events e
             JOIN unnest($1::text[], $2::text[]) AS q (namespace, sender_id)
               ON e.namespace = q.namespace AND e.sender_id = q.sender_id"
        ))
        .bind(repeats.iter().map(|r| r.0).collect::<Vec<_>>())
        .bind(repeats.iter().map(|r| r.1).collect::<Vec<_>>())
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .filter_map(|r| Some(((r.namespace.clone(), r.sender_id.clone()?), r)))
        .collect()
    };
    stored
        .into_iter()
        .map(|(id, namespace, sender)| {
            if let Some(row) = by_id.remove(&id) {
                return Ok(Stored::Created(row.into()));
            }
            let row = sender.and_then(|s| by_sender.get(&(namespace, s)));
            row.map(|r| Stored::Existing(r.clone().into()))
                .ok_or_else(|| super::Error::Answer {
                    function: "events",
                    source: serde::de::Error::custom(format!(
                        "event {id} neither stored nor found"
                    )),
                })
        })
        .collect()
}
