//! Task creation in shared statements: the `POST /v1/tasks` requests that arrive while a
//! creation statement runs go into the next `tasker_create_tasks` together, one statement and
//! one commit for all of them (PostgreSQL spends most of a short task's time on the statement
//! that creates it: docs/benchmarks/postgres_per_step.md). Nothing waits for a batch to fill:
//! a request that finds a creator idle runs at once, alone. A batch PostgreSQL refuses for one
//! task's sake (bad data, not an unreachable database) is split in halves until that task
//! stands alone, so no request fails for another's. Each request is answered after its
//! batch's commit and after what the commit leaves to do (publishing root steps) is done, as
//! when it ran alone.

use std::sync::{Arc, OnceLock};

use tokio::sync::{Mutex, mpsc, oneshot};

use crate::effects::Effects;
use crate::executor;
use crate::shared::Shared;
use crate::store::{self, BatchAnswer, CreateBatch, Created, NewTask};

/// Statements in flight at once: one runs while the next batch gathers.
const CREATORS: usize = 2;
/// At most this many tasks per statement.
const MAX_TASKS: usize = 64;
/// And at most about this many bytes of request bodies (contexts) per statement.
const MAX_BYTES: usize = 1 << 20;

/// One request's task, planned alone, waiting for a statement.
struct Request {
    batch: CreateBatch,
    bytes: usize,
    reply: oneshot::Sender<store::Result<BatchAnswer>>,
}

/// The queue of task creations waiting for a statement, and its creators (started with the
/// first creation; they end when the last handle is dropped). The API holds it.
#[derive(Debug, Clone)]
pub struct Creates {
    queue: mpsc::UnboundedSender<Request>,
    waiting: Arc<Mutex<mpsc::UnboundedReceiver<Request>>>,
    started: Arc<OnceLock<()>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl Default for Creates {
    fn default() -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        Self {
            queue,
            waiting: Arc::new(Mutex::new(waiting)),
            started: Arc::default(),
        }
    }
}

impl Creates {
    /// Creates `new` (its request body `bytes` long) in the next statement; what the commit
    /// leaves to do is done by then, so the effects returned are empty. A task with a start
    /// control runs in a statement of its own.
    pub async fn create(
        &self,
        shared: &Shared,
        new: NewTask<'_>,
        bytes: usize,
    ) -> store::Result<Created> {
        let (template_id, context) = (new.template_id, new.context.clone());
        let mut batch = CreateBatch::default();
        batch.add(new).map_err(store::Error::Limits)?;
        if batch.controlled() {
            let (answers, effects) = shared.store.create_tasks(&batch).await?;
            let answer = answers.into_iter().next().ok_or_else(no_answer)?;
            return Ok(Created::from_answer(answer, template_id, context, effects));
        }
        self.started.get_or_init(|| {
            for _ in 0..CREATORS {
                tokio::spawn(creator(shared.clone(), self.waiting.clone()));
            }
        });
        let (reply, answer) = oneshot::channel();
        let request = Request {
            batch,
            bytes,
            reply,
        };
        self.queue.send(request).map_err(|_| stopped())?;
        let answer = answer.await.map_err(|_| stopped())??;
        Ok(Created::from_answer(
            answer,
            template_id,
            context,
            Effects::default(),
        ))
    }
}

/// Takes the requests waiting (at least one; at most a statement's worth), creates them and
/// answers each, until every [`Creates`] handle is gone (the API stopped: nothing waits).
async fn creator(shared: Shared, waiting: Arc<Mutex<mpsc::UnboundedReceiver<Request>>>) {
    loop {
        let requests = {
            let mut waiting = waiting.lock().await;
            let Some(first) = waiting.recv().await else {
                return;
            };
            let mut bytes = first.bytes;
            let mut requests = vec![first];
            while requests.len() < MAX_TASKS && bytes < MAX_BYTES {
                let Ok(next) = waiting.try_recv() else { break };
                bytes += next.bytes;
                requests.push(next);
            }
            requests
        };
        metrics::histogram!(crate::metrics::CREATE_BATCH_SIZE.name).record(requests.len() as f64);
        let (answers, effects) = create_isolating(&shared.store, &requests).await;
        executor::execute(&shared, effects).await;
        for (request, answer) in requests.into_iter().zip(answers) {
            // The caller may have gone (its connection closed): the task stands all the same.
            let _ = request.reply.send(answer);
        }
    }
}

/// Creates `requests`' tasks in as few statements as PostgreSQL takes: a statement refused for
/// a reason of its own (not an unreachable database) is split in halves until the task that
/// cannot be created stands alone. Answers each request, in order, with the effects of all.
async fn create_isolating(
    store: &store::Store,
    requests: &[Request],
) -> (Vec<store::Result<BatchAnswer>>, Effects) {
    let mut answers: Vec<Option<store::Result<BatchAnswer>>> =
        requests.iter().map(|_| None).collect();
    let mut effects = Effects::default();
    // Ranges of `requests` still to create, the first on top.
    let mut todo: Vec<std::ops::Range<usize>> = Vec::new();
    todo.push(0..requests.len());
    while let Some(range) = todo.pop() {
        let batch = merged(&requests[range.clone()]);
        match create_retrying(store, &batch).await {
            Ok((got, fx)) => {
                effects.merge(fx);
                let mut got = got.into_iter();
                for i in range {
                    answers[i] = Some(got.next().ok_or_else(no_answer));
                }
            }
            Err(e) if range.len() > 1 && !e.is_transient() => {
                let half = range.start + range.len() / 2;
                todo.push(half..range.end);
                todo.push(range.start..half);
            }
            Err(e) => {
                let copies = shared_error(e, range.len());
                for (i, e) in range.zip(copies) {
                    answers[i] = Some(Err(e));
                }
            }
        }
    }
    let answers = answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| Err(no_answer())))
        .collect();
    (answers, effects)
}

/// One batch of `requests`' tasks (one each), in their order.
fn merged(requests: &[Request]) -> CreateBatch {
    let mut batch = CreateBatch::default();
    for r in requests {
        batch.absorb(&r.batch);
    }
    batch
}

/// Runs `batch`, again (up to five times) when PostgreSQL chose it as a deadlock victim: two
/// batches may insert the same idempotency keys in other orders.
async fn create_retrying(
    store: &store::Store,
    batch: &CreateBatch,
) -> store::Result<(Vec<BatchAnswer>, Effects)> {
    let mut attempt = 0;
    loop {
        match store.create_tasks(batch).await {
            Err(e) if e.is_retryable() && attempt < 5 => attempt += 1,
            other => return other,
        }
    }
}

/// `e` for the first of `n` requests, and a copy of its message for the others: the same
/// status, since an unreachable database stays so for all of them.
fn shared_error(e: store::Error, n: usize) -> Vec<store::Error> {
    let copy = |e: &store::Error| {
        let io = std::io::Error::other(e.to_string());
        if e.is_transient() {
            store::Error::Unavailable(sqlx::Error::Io(io))
        } else {
            store::Error::Query(sqlx::Error::Io(io))
        }
    };
    let copies: Vec<store::Error> = (1..n).map(|_| copy(&e)).collect();
    std::iter::once(e).chain(copies).collect()
}

fn no_answer() -> store::Error {
    store::Error::Answer {
        function: "tasker_create_tasks",
        source: serde::de::Error::custom("no task in the answer"),
    }
}

/// The creators stopped with the orchestrator before taking the request.
fn stopped() -> store::Error {
    store::Error::Unavailable(sqlx::Error::PoolClosed)
}
