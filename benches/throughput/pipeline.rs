//! The polyglot pipeline: events through TypeScript → Rust → Python → Ruby → TypeScript, the
//! aggregates compared with the oracle, and where the CPU went.

use super::*;

/// The seed project's figures for this pipeline (TypeScript → Rust → Python → Go → TypeScript,
/// 100,000 events, not durable), for reference only: measured elsewhere, on other hardware.
pub(crate) const SEED_FIGURES: &str = "seed: 25,000 events/s one event per call, 77,000 events/s batched \
    50-100 events; C++ monolith 44,000 events/s";

/// CPU seconds (user + system) used so far by each user process on the machine (kernel threads
/// left out), by pid with its command name (`postgres`, `beam.smp`, `tasker-orchestr`, `node`,
/// …): the difference of two readings says where a run's CPU went.
pub(crate) fn cpu_by_process() -> BTreeMap<u32, (String, f64)> {
    // Clock ticks per second: 100 on Linux (USER_HZ).
    const TICKS: f64 = 100.0;
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // A kernel thread has no command line.
        if std::fs::read(entry.path().join("cmdline")).map_or(true, |c| c.is_empty()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so split at its closing parenthesis.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        // After the comm: state is field 0, utime 11, stime 12.
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        out.insert(
            pid,
            (
                stat[open + 1..close].to_owned(),
                (ticks(11) + ticks(12)) / TICKS,
            ),
        );
    }
    out
}

/// The CPU seconds each command used between two [`cpu_by_process`] readings (a process that
/// started meanwhile counts whole; one that ended is missed), those under 10 ms left out.
pub(crate) fn cpu_used(
    before: &BTreeMap<u32, (String, f64)>,
    after: &BTreeMap<u32, (String, f64)>,
) -> Value {
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for (pid, (comm, cpu)) in after {
        let was = before
            .get(pid)
            .filter(|(c, _)| c == comm)
            .map_or(0.0, |(_, v)| *v);
        *used.entry(comm.clone()).or_default() += cpu - was;
    }
    Value::Object(
        used.into_iter()
            .filter(|(_, d)| *d >= 0.01)
            .map(|(k, v)| (k, json!(v)))
            .collect(),
    )
}

/// Runs `events` events through `polyglot/pipeline`, one task per batch of `batch` events with
/// at most `in_flight` tasks at once; checks the aggregates against the oracle and reports
/// events/s end to end and each stage's time.
pub(crate) async fn pipeline(
    stack: &Arc<Stack>,
    pool: &PgPool,
    events: u32,
    batch: u32,
    in_flight: usize,
) -> anyhow::Result<Value> {
    let tasks = events.div_ceil(batch);
    let slots = Arc::new(tokio::sync::Semaphore::new(in_flight));
    let cpu_before = cpu_by_process();
    let started = Instant::now();
    let mut runs = Vec::with_capacity(tasks as usize);
    for b in 0..tasks {
        let permit = slots.clone().acquire_owned().await?;
        let stack = stack.clone();
        let first = b * batch;
        let count = batch.min(events - first);
        runs.push(tokio::spawn(async move {
            let task =
                stack
                    .client
                    .create_task(&CreateTask::new("polyglot", "pipeline").context(
                        json!({"seed": 42, "users": 10_000, "first": first, "count": count}),
                    ))
                    .await?;
            let state = stack.done.wait(task.id, Duration::from_secs(600)).await?;
            drop(permit);
            anyhow::ensure!(
                state == "complete",
                "pipeline task {} ended {state}",
                task.id
            );
            anyhow::Ok(task.id)
        }));
    }
    let mut ids = Vec::with_capacity(runs.len());
    for r in runs {
        ids.push(r.await??);
    }
    let elapsed = started.elapsed();
    let cpu = cpu_used(&cpu_before, &cpu_by_process());
    let sinks: Vec<Value> =
        sqlx::query_scalar("SELECT result FROM steps WHERE task_id = ANY($1) AND name = 'sink'")
            .bind(&ids)
            .fetch_all(pool)
            .await?;
    let mut rows = tasker::pipeline::Rows::new();
    for sink in &sinks {
        tasker::pipeline::merge(sink, &mut rows)?;
    }
    let equal = rows == tasker::pipeline::oracle(42, 10_000, 0, events);
    let stages: Vec<(String, i64, f64, f64)> = sqlx::query_as(
        "SELECT name, count(*),
                sum(extract(epoch FROM finished_at - started_at))::float8,
                sum(extract(epoch FROM started_at - dispatched_at))::float8
         FROM steps WHERE task_id = ANY($1) GROUP BY name",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let order = ["ingest", "parse", "rules", "aggregate", "sink"];
    let mut per_stage = serde_json::Map::new();
    for name in order {
        if let Some((_, n, run, queue)) = stages.iter().find(|s| s.0 == name) {
            per_stage.insert(
                name.into(),
                json!({"steps": n, "worker_s": run, "queued_s": queue,
                       "worker_ms_per_step": run * 1000.0 / *n as f64}),
            );
        }
    }
    Ok(json!({
        "events": events, "batch": batch, "tasks": tasks, "seconds": elapsed.as_secs_f64(),
        "events_per_s": f64::from(events) / elapsed.as_secs_f64(),
        "equal_to_oracle": equal, "stages": per_stage, "cpu_seconds": cpu,
        "cpu_available_seconds": elapsed.as_secs_f64()
            * std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
    }))
}

pub(crate) fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
