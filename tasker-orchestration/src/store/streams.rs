//! Step streams in the database: the chunks handlers emit, kept at dense task-wide positions
//! (`stream_chunks`, `task_streams`), and each streaming attempt's head (`stream_attempts`: the
//! `seq` expected next, bytes kept, ended). One orchestrator at a time keeps chunks (the
//! streams queue has a single active consumer), a batch per transaction.

use std::collections::HashMap;
use std::sync::Arc;

use uuid::Uuid;

use tasker_shared::api::StreamChunk;
use tasker_shared::stream::{Chunk, MAX_STREAM_BYTES_CEILING};

use super::stream_reads::ancestors;
use super::{Result, Store};

/// Channel of the `pg_notify` sent when chunks were kept: the payload is
/// `<task id>:<next position>` entries, comma-separated.
pub const STREAM_KEPT_CHANNEL: &str = "tasker_stream";

/// Longest `pg_notify` payload sent (PostgreSQL's limit is 8,000 bytes).
const NOTIFY_BYTES: usize = 7_000;

/// A chunk offered to be kept, with what its sender may move (`None`: any step; else the
/// PostgreSQL regular expression of the namespaces it may serve).
#[derive(Debug)]
pub struct Offered<'a> {
    pub chunk: &'a Chunk,
    pub permit: Option<Arc<str>>,
}

/// A chunk kept in a task's stream: the task's own, or a copy of a child task's (`namespace`:
/// the child's).
#[derive(Debug, Clone)]
pub struct KeptChunk {
    pub task: Uuid,
    pub chunk: StreamChunk,
    pub namespace: Option<Arc<str>>,
}

/// What a batch of chunks came to.
#[derive(Debug, Default)]
pub struct Kept {
    /// Kept, with their tasks and positions: each task's in position order; copies of child
    /// tasks' chunks in their ancestors' streams among them.
    pub chunks: Vec<KeptChunk>,
    /// Each task's next position once committed.
    pub heads: Vec<(Uuid, i64)>,
    /// Refused (the offered index, and why): their messages go to the dead letters.
    pub refused: Vec<(usize, String)>,
    /// Left out: copies of chunks already kept, chunks after their attempt's end, chunks past
    /// [`MAX_STREAM_BYTES_CEILING`] for their attempt.
    pub copies: usize,
    pub after_end: usize,
    pub too_large: usize,
    /// Chunks of a run of an attempt that another run has started over.
    pub superseded: usize,
}

#[derive(sqlx::FromRow)]
struct StepRow {
    i: i64,
    task_id: Uuid,
    name: String,
    attempt: i32,
    allowed: bool,
}

#[derive(Debug, Clone, sqlx::FromRow)]
struct Head {
    step_id: Uuid,
    attempt: i32,
    task_id: Uuid,
    next_seq: i32,
    bytes: i64,
    ended: bool,
    run: Option<Uuid>,
}

/// A chunk accepted, before its position is known.
#[derive(Clone)]
struct Accepted<'a> {
    chunk: &'a Chunk,
    step: String,
    /// The first chunk of a stream that starts over.
    retry: bool,
    /// Kept in an ancestor's stream: the child task's namespace.
    copy_of: Option<Arc<str>>,
}

impl Store {
    /// Keeps a batch of chunks in one transaction: each must name a step of its task, an
    /// attempt already dispatched, and a namespace its sender may serve, else it is refused.
    /// `live` receives the chunks with their positions before they are committed (live
    /// readers need not wait for the write); the commit notifies [`STREAM_KEPT_CHANNEL`].
    pub async fn keep_chunks(
        &self,
        offered: &[Offered<'_>],
        live: impl FnOnce(&[KeptChunk]),
    ) -> Result<Kept> {
        let mut kept = Kept::default();
        let mut tx = self.pool.begin().await?;
        let steps = steps_of(&mut tx, offered).await?;
        let mut accepted = Vec::with_capacity(offered.len());
        for (i, o) in offered.iter().enumerate() {
            let c = o.chunk;
            let key = (c.step_id, o.permit.as_deref().map(str::to_owned));
            let problem = c.problem().or_else(|| match steps.get(&key) {
                None => Some(format!("no step {} (task {})", c.step_id, c.task_id)),
                Some(s) if s.task_id != c.task_id => Some(format!(
                    "step {} is not a step of task {}",
                    c.step_id, c.task_id
                )),
                Some(s) if !s.allowed => Some(format!(
                    "step {} is of a namespace its sender may not serve",
                    c.step_id
                )),
                Some(s) if i64::from(c.attempt) > i64::from(s.attempt) => Some(format!(
                    "attempt {} of step {} was never dispatched",
                    c.attempt, c.step_id
                )),
                Some(_) => None,
            });
            match problem {
                Some(p) => kept.refused.push((i, format!("stream chunk refused: {p}"))),
                None => accepted.push(Accepted {
                    chunk: c,
                    step: steps[&key].name.clone(),
                    retry: c.attempt > 1 && c.seq == 0,
                    copy_of: None,
                }),
            }
        }
        let mut heads = heads_of(&mut tx, &accepted).await?;
        let mut per_task: HashMap<Uuid, Vec<Accepted>> = HashMap::new();
        for mut a in accepted {
            let c = a.chunk;
            let head = heads
                .entry((c.step_id, c.attempt as i32))
                .or_insert_with(|| Head {
                    step_id: c.step_id,
                    attempt: c.attempt as i32,
                    task_id: c.task_id,
                    next_seq: 0,
                    bytes: 0,
                    ended: false,
                    run: c.run,
                });
            // Another run of the attempt (its worker died, the step runs again): its stream
            // starts over from its first chunk; what is left of the old run is superseded.
            if c.run.is_some() && head.run.is_some() && c.run != head.run {
                if c.seq != 0 {
                    kept.superseded += 1;
                    continue;
                }
                (head.next_seq, head.bytes, head.ended, head.run) = (0, 0, false, c.run);
                a.retry = true;
            }
            head.run = head.run.or(c.run);
            let bytes = head.bytes + c.size() as i64;
            if i64::from(c.seq) < i64::from(head.next_seq) {
                kept.copies += 1;
                continue;
            }
            if head.ended {
                kept.after_end += 1;
                continue;
            }
            if bytes as u64 > MAX_STREAM_BYTES_CEILING {
                kept.too_large += 1;
                continue;
            }
            head.next_seq = c.seq as i32 + 1;
            head.bytes = bytes;
            head.ended = c.end;
            per_task.entry(c.task_id).or_default().push(a);
        }
        if per_task.is_empty() {
            tx.commit().await?;
            return Ok(kept);
        }
        copy_to_ancestors(&mut tx, &mut per_task).await?;
        kept.heads = reserve(&mut tx, &per_task).await?;
        for (task, next) in &kept.heads {
            let chunks = &per_task[task];
            let first = next - chunks.len() as i64;
            kept.chunks
                .extend(chunks.iter().enumerate().map(|(n, a)| KeptChunk {
                    task: *task,
                    chunk: view(*task, a, first + n as i64),
                    namespace: a.copy_of.clone(),
                }));
        }
        live(&kept.chunks);
        insert(&mut tx, &kept.chunks).await?;
        save_heads(&mut tx, heads.values().cloned().collect()).await?;
        notify(&mut tx, &kept.heads).await?;
        tx.commit().await?;
        Ok(kept)
    }

    /// Records how many chunks step attempts streamed, as their results say (`(step, attempt,
    /// chunks, permit)`), before the results are applied: a reader that sees the task ended
    /// waits for those chunks (they travel in another queue). A result's sender must serve its
    /// step's namespace, and the attempt must have been dispatched, or nothing is recorded.
    pub async fn expect_streams(
        &self,
        expected: &[(Uuid, u32, u32, Option<Arc<str>>)],
    ) -> Result<()> {
        if expected.is_empty() {
            return Ok(());
        }
        let steps: Vec<Uuid> = expected.iter().map(|e| e.0).collect();
        let attempts: Vec<i32> = expected.iter().map(|e| e.1 as i32).collect();
        let counts: Vec<i32> = expected
            .iter()
            .map(|e| e.2.min(i32::MAX as u32) as i32)
            .collect();
        let permits: Vec<Option<&str>> = expected.iter().map(|e| e.3.as_deref()).collect();
        sqlx::query(
            "INSERT INTO stream_attempts (step_id, attempt, task_id, next_seq, bytes, expected)
             SELECT x.step_id, x.attempt, s.task_id, 0, 0, x.n
               FROM unnest($1::uuid[], $2::int4[], $3::int4[], $4::text[])
                    AS x(step_id, attempt, n, permit)
               JOIN steps s ON s.id = x.step_id JOIN tasks t ON t.id = s.task_id
              WHERE (x.permit IS NULL OR t.namespace ~ x.permit)
                AND x.attempt BETWEEN 1 AND s.attempt
              ORDER BY x.step_id, x.attempt
             ON CONFLICT (step_id, attempt)
             DO UPDATE SET expected = excluded.expected, last_at = tasker_now()",
        )
        .bind(&steps)
        .bind(&attempts)
        .bind(&counts)
        .bind(&permits)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Adds to each streaming child task's ancestors' streams a copy of the child's chunks.
async fn copy_to_ancestors(
    tx: &mut sqlx::PgConnection,
    per_task: &mut HashMap<Uuid, Vec<Accepted<'_>>>,
) -> Result<()> {
    let tasks: Vec<Uuid> = per_task.keys().copied().collect();
    for (task, ancestor, namespace) in ancestors(tx, &tasks).await? {
        let copies: Vec<Accepted> = per_task[&task]
            .iter()
            .filter(|a| a.copy_of.is_none())
            .map(|a| Accepted {
                copy_of: Some(namespace.clone()),
                ..a.clone()
            })
            .collect();
        per_task.entry(ancestor).or_default().extend(copies);
    }
    Ok(())
}

/// The steps the chunks name, by step and permit: their task, name, current attempt, and
/// whether the permit covers their namespace.
async fn steps_of(
    tx: &mut sqlx::PgConnection,
    offered: &[Offered<'_>],
) -> Result<HashMap<(Uuid, Option<String>), StepRow>> {
    let mut pairs: Vec<(Uuid, Option<String>)> = offered
        .iter()
        .map(|o| (o.chunk.step_id, o.permit.as_deref().map(str::to_owned)))
        .collect();
    pairs.sort();
    pairs.dedup();
    let (ids, permits): (Vec<Uuid>, Vec<Option<String>>) = pairs.iter().cloned().unzip();
    let rows: Vec<StepRow> = sqlx::query_as(
        "SELECT x.i, s.task_id, s.name, s.attempt,
                (x.permit IS NULL OR t.namespace ~ x.permit) AS allowed
           FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS x(step_id, permit, i)
           JOIN steps s ON s.id = x.step_id JOIN tasks t ON t.id = s.task_id",
    )
    .bind(&ids)
    .bind(&permits)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (pairs[r.i as usize - 1].clone(), r))
        .collect())
}

/// The heads of the attempts the chunks belong to, locked.
async fn heads_of(
    tx: &mut sqlx::PgConnection,
    accepted: &[Accepted<'_>],
) -> Result<HashMap<(Uuid, i32), Head>> {
    let mut keys: Vec<(Uuid, i32)> = accepted
        .iter()
        .map(|a| (a.chunk.step_id, a.chunk.attempt as i32))
        .collect();
    keys.sort();
    keys.dedup();
    let (steps, attempts): (Vec<Uuid>, Vec<i32>) = keys.into_iter().unzip();
    let rows: Vec<Head> = sqlx::query_as(
        "SELECT a.step_id, a.attempt, a.task_id, a.next_seq, a.bytes, a.ended, a.run
           FROM stream_attempts a
           JOIN unnest($1::uuid[], $2::int4[]) AS x(step_id, attempt) USING (step_id, attempt)
          ORDER BY a.step_id, a.attempt FOR UPDATE OF a",
    )
    .bind(&steps)
    .bind(&attempts)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .map(|h| ((h.step_id, h.attempt), h))
        .collect())
}

/// Takes the next positions of each task (locking its `task_streams` row until the commit, so
/// positions are committed in order): each task's next position after them.
async fn reserve(
    tx: &mut sqlx::PgConnection,
    per_task: &HashMap<Uuid, Vec<Accepted<'_>>>,
) -> Result<Vec<(Uuid, i64)>> {
    let mut tasks: Vec<(Uuid, i64)> = per_task.iter().map(|(t, c)| (*t, c.len() as i64)).collect();
    tasks.sort();
    let (ids, counts): (Vec<Uuid>, Vec<i64>) = tasks.into_iter().unzip();
    Ok(sqlx::query_as(
        "INSERT INTO task_streams (task_id, next_position)
         SELECT * FROM unnest($1::uuid[], $2::int8[])
         ON CONFLICT (task_id)
         DO UPDATE SET next_position = task_streams.next_position + excluded.next_position
         RETURNING task_id, next_position",
    )
    .bind(&ids)
    .bind(&counts)
    .fetch_all(&mut *tx)
    .await?)
}

fn view(task: Uuid, a: &Accepted<'_>, offset: i64) -> StreamChunk {
    let c = a.chunk;
    StreamChunk {
        offset,
        task_id: if a.copy_of.is_some() { c.task_id } else { task },
        step_id: c.step_id,
        step: a.step.clone(),
        attempt: c.attempt as i32,
        seq: c.seq as i32,
        topic: c.topic.clone(),
        text: c.text.clone(),
        data: c.data.clone(),
        end: c.end,
        retry: a.retry,
        // As PostgreSQL keeps it: live readers and later ones read the same chunk.
        at: chrono::SubsecRound::trunc_subsecs(c.at, 6),
    }
}

/// Writes kept chunks, a statement for the batch (a copy names its child task, the child's
/// namespace and the step's name: the child may be purged before its ancestor).
async fn insert(tx: &mut sqlx::PgConnection, chunks: &[KeptChunk]) -> Result<()> {
    let col =
        |f: fn(&KeptChunk) -> Option<&str>| -> Vec<Option<&str>> { chunks.iter().map(f).collect() };
    let tasks: Vec<Uuid> = chunks.iter().map(|k| k.task).collect();
    let positions: Vec<i64> = chunks.iter().map(|k| k.chunk.offset).collect();
    let steps: Vec<Uuid> = chunks.iter().map(|k| k.chunk.step_id).collect();
    let attempts: Vec<i32> = chunks.iter().map(|k| k.chunk.attempt).collect();
    let seqs: Vec<i32> = chunks.iter().map(|k| k.chunk.seq).collect();
    let ends: Vec<bool> = chunks.iter().map(|k| k.chunk.end).collect();
    let retries: Vec<bool> = chunks.iter().map(|k| k.chunk.retry).collect();
    let ats: Vec<_> = chunks.iter().map(|k| k.chunk.at).collect();
    let origins: Vec<Option<Uuid>> = chunks
        .iter()
        .map(|k| k.namespace.is_some().then_some(k.chunk.task_id))
        .collect();
    let data: Vec<Option<String>> = chunks
        .iter()
        .map(|k| k.chunk.data.as_ref().map(ToString::to_string))
        .collect();
    sqlx::query(
        "INSERT INTO stream_chunks
                (task_id, position, step_id, attempt, seq, topic, text, data, ended, at, retry,
                 origin, origin_namespace, origin_step)
         SELECT t, p, s, a, q, topic, text, d::jsonb, e, at, r, o, ons, ost
           FROM unnest($1::uuid[], $2::int8[], $3::uuid[], $4::int4[], $5::int4[], $6::text[],
                       $7::text[], $8::text[], $9::bool[], $10::timestamptz[], $11::bool[],
                       $12::uuid[], $13::text[], $14::text[])
                AS x(t, p, s, a, q, topic, text, d, e, at, r, o, ons, ost)",
    )
    .bind(&tasks)
    .bind(&positions)
    .bind(&steps)
    .bind(&attempts)
    .bind(&seqs)
    .bind(col(|k| Some(&k.chunk.topic)))
    .bind(col(|k| k.chunk.text.as_deref()))
    .bind(&data)
    .bind(&ends)
    .bind(&ats)
    .bind(&retries)
    .bind(&origins)
    .bind(col(|k| k.namespace.as_deref()))
    .bind(col(|k| {
        k.namespace.is_some().then_some(k.chunk.step.as_str())
    }))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn save_heads(tx: &mut sqlx::PgConnection, heads: Vec<Head>) -> Result<()> {
    let mut cols = (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut runs = Vec::with_capacity(heads.len());
    for h in heads {
        cols.0.push(h.step_id);
        cols.1.push(h.attempt);
        cols.2.push(h.task_id);
        cols.3.push(h.next_seq);
        cols.4.push(h.bytes);
        cols.5.push(h.ended);
        runs.push(h.run);
    }
    sqlx::query(
        "INSERT INTO stream_attempts
                (step_id, attempt, task_id, next_seq, bytes, ended, run, last_at)
         SELECT x.*, tasker_now() FROM unnest($1::uuid[], $2::int4[], $3::uuid[], $4::int4[],
                                       $5::int8[], $6::bool[], $7::uuid[]) AS x
         ON CONFLICT (step_id, attempt) DO UPDATE
            SET next_seq = excluded.next_seq, bytes = excluded.bytes, ended = excluded.ended,
                run = excluded.run, last_at = tasker_now()",
    )
    .bind(&cols.0)
    .bind(&cols.1)
    .bind(&cols.2)
    .bind(&cols.3)
    .bind(&cols.4)
    .bind(&cols.5)
    .bind(&runs)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Tells every orchestrator (on commit) how far each task's stream reaches now.
async fn notify(tx: &mut sqlx::PgConnection, heads: &[(Uuid, i64)]) -> Result<()> {
    let mut payloads = vec![String::new()];
    for (task, next) in heads {
        let entry = format!("{task}:{next}");
        let last = payloads.last_mut().expect("never empty");
        if !last.is_empty() && last.len() + entry.len() + 1 > NOTIFY_BYTES {
            payloads.push(entry);
        } else {
            if !last.is_empty() {
                last.push(',');
            }
            last.push_str(&entry);
        }
    }
    sqlx::query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p")
        .bind(STREAM_KEPT_CHANNEL)
        .bind(&payloads)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// Reads a [`STREAM_KEPT_CHANNEL`] payload: each task and its stream's next position.
pub fn parse_kept(payload: &str) -> Vec<(Uuid, i64)> {
    payload
        .split(',')
        .filter_map(|e| {
            let (task, next) = e.split_once(':')?;
            Some((task.parse().ok()?, next.parse().ok()?))
        })
        .collect()
}
