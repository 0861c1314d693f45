//! Timers across process deaths and load, with real orchestrator processes: a sleep outlives a
//! SIGKILL of the only orchestrator; 200 every-second schedules on three orchestrators, one of
//! them killed midway, start exactly one task per schedule and second with none missing; an
//! outage longer than the catch-up window skips and counts what is outside it and catches up
//! one fire after another; a long task on a one-second schedule never overlaps itself; 10,000
//! sleeping tasks cost an idle orchestrator one indexed query a tick.

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use tasker::TestEnv;
use tasker_client::{Client, CreateTask, Overlap, ScheduleSpec};

use common::{free_port, start_orchestrator_with};

/// Sweeps (and so timer passes) every 250 ms, a killed orchestrator's steps re-sent after 3 s.
const FAST: [(&str, &str); 2] = [
    ("TASKER_ORCHESTRATOR__SWEEP_INTERVAL_MS", "250"),
    ("TASKER_ORCHESTRATOR__VISIBILITY_TIMEOUT_MS", "3000"),
];

async fn register(client: &Client, name: &str, steps: &str) -> anyhow::Result<()> {
    let yaml = format!("namespace: timed\nname: {name}\nversion: '1'\nsteps:\n{steps}");
    client
        .register_template(&yaml, Some(&format!("{name}.yaml")), None)
        .await?;
    Ok(())
}

fn every_second(name: &str, template: &str, overlap: Overlap, catch_up: &str) -> ScheduleSpec {
    ScheduleSpec {
        namespace: "timed".into(),
        name: name.into(),
        template: template.into(),
        version: None,
        cron: "* * * * * *".into(),
        timezone: "UTC".into(),
        context: None,
        overlap,
        catch_up: Some(catch_up.into()),
    }
}

/// Polls `check` every 50 ms until it holds, for at most `timeout` (a process of its own has
/// no event this test can subscribe to).
async fn until<F, Fut>(timeout: Duration, what: &str, check: F) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tick.tick().await;
        if check().await? {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "{what}: not within {timeout:?}");
    }
}

/// Every task a schedule started, by nominal time, with its creation time.
async fn fires(
    pool: &sqlx::PgPool,
    schedule: &str,
) -> anyhow::Result<BTreeMap<DateTime<Utc>, DateTime<Utc>>> {
    let rows: Vec<(String, DateTime<Utc>)> = sqlx::query_as(
        "SELECT t.idempotency_key, t.created_at FROM tasks t JOIN schedules s
             ON t.idempotency_key LIKE 'schedule:' || s.id || ':%'
         WHERE s.name = $1",
    )
    .bind(schedule)
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(key, at)| {
            // `schedule:<id>:<nominal time>`, the time in whole seconds (20 characters).
            let nominal: DateTime<Utc> = key[key.len().saturating_sub(20)..].parse()?;
            Ok((nominal, at))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_outlives_a_sigkill_of_the_only_orchestrator() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let mut first = start_orchestrator_with(&env, free_port()?, &FAST).await?;
    register(
        &first.client,
        "nap",
        "  - name: nap\n    wait: {sleep: 3s}\n",
    )
    .await?;
    let task = first
        .client
        .create_task(&CreateTask::new("timed", "nap"))
        .await?;
    let client = first.client.clone();
    until(Duration::from_secs(10), "the step sleeps", || async {
        Ok(client.steps(task.id).await?[0].state == "waiting")
    })
    .await?;
    first.child.start_kill()?;
    first.child.wait().await?;
    let second = start_orchestrator_with(&env, free_port()?, &FAST).await?;
    let done = second.client.wait(task.id, Duration::from_secs(20)).await?;
    assert_eq!(done.state, "complete");
    let took = done.completed_at.expect("completed") - done.created_at;
    eprintln!("a 3 s sleep across a SIGKILL ended after {took}");
    assert!(
        took >= chrono::Duration::seconds(3) && took < chrono::Duration::milliseconds(4500),
        "a 3 s sleep took {took}"
    );
    drop(second);
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_second_schedules_fire_once_per_time_across_three_orchestrators_and_a_kill()
-> anyhow::Result<()> {
    let schedules: usize = std::env::var("TASKER_TIME_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let run = Duration::from_secs(
        std::env::var("TASKER_TIME_SECONDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60),
    );
    let env = TestEnv::new().await?;
    let mut orchestrators = Vec::new();
    for _ in 0..3 {
        orchestrators.push(start_orchestrator_with(&env, free_port()?, &FAST).await?);
    }
    let client = orchestrators[1].client.clone();
    // A step for a worker that is not there: each fire is one task created and one message.
    register(&client, "job", "  - name: job\n    handler: noop\n").await?;
    // When each schedule was saved and when it was paused: it fires from the one to the other.
    // The catch-up window is longer than the run: on a machine loaded by other suites the fires
    // lag by tens of seconds (200 a second on debug builds), and a time past a shorter window
    // would rightly be skipped; this test is about once per time, the outage test about skips.
    let mut saved = Vec::new();
    for i in 0..schedules {
        client
            .put_schedule(&every_second(
                &format!("s{i:03}"),
                "job",
                Overlap::Allow,
                "10m",
            ))
            .await?;
        saved.push(Utc::now());
    }
    tokio::time::sleep(run / 2).await;
    orchestrators[0].child.start_kill()?;
    orchestrators[0].child.wait().await?;
    eprintln!("orchestrator 0 killed after {:?}", run / 2);
    tokio::time::sleep(run / 2).await;
    let mut paused = Vec::new();
    for i in 0..schedules {
        let before = Utc::now();
        client
            .pause_schedule("timed", &format!("s{i:03}"), None)
            .await?;
        paused.push(before);
    }
    let pool = sqlx::PgPool::connect(&env.config.database_url).await?;
    let (mut total, mut late) = (0usize, Vec::new());
    for i in 0..schedules {
        let name = format!("s{i:03}");
        let fired = fires(&pool, &name).await?;
        let (Some(first), Some(last)) = (fired.keys().next(), fired.keys().last()) else {
            anyhow::bail!("schedule {name} never fired");
        };
        let skipped: i64 = sqlx::query_scalar("SELECT skipped FROM schedules WHERE name = $1")
            .bind(&name)
            .fetch_one(&pool)
            .await?;
        assert_eq!(
            skipped, 0,
            "{name} skipped fires inside its catch-up window"
        );
        let slots = (*last - *first).num_seconds() + 1;
        assert_eq!(
            fired.len() as i64,
            slots,
            "{name}: {} tasks for {slots} seconds from {first} to {last}: one is missing",
            fired.len()
        );
        // It fired from its save to its pause, as late as it ran: on a loaded machine a fire
        // lags its time, and the times still to fire when the pause came are rightly not fired.
        let lag = fired
            .iter()
            .map(|(n, at)| *at - *n)
            .max()
            .unwrap_or_default();
        let slack = chrono::Duration::seconds(5);
        assert!(
            *first < saved[i] + slack && *last > paused[i] - lag - slack,
            "{name}: saved at {}, first fire {first}; paused at {}, last fire {last} \
             (fires up to {lag} late)",
            saved[i],
            paused[i]
        );
        total += fired.len();
        late.extend(fired.iter().map(|(n, at)| (*at - *n).num_milliseconds()));
    }
    // Exactly one per (schedule, time) is also the unique idempotency key's guarantee: count
    // what the keys cannot see, tasks of a schedule beyond its keys.
    let all: i64 = sqlx::query_scalar("SELECT count(*) FROM tasks WHERE namespace = 'timed'")
        .fetch_one(&pool)
        .await?;
    assert_eq!(all as usize, total, "tasks outside the fire keys");
    late.sort_unstable();
    eprintln!(
        "{schedules} schedules, {total} fires in {run:?} on 3 orchestrators (one killed): \
         lateness p50 {} ms, p95 {} ms, max {} ms",
        late[late.len() / 2],
        late[late.len() * 95 / 100],
        late[late.len() - 1]
    );
    pool.close().await;
    drop(orchestrators);
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_catch_up_window_skips_and_counts_the_rest_and_never_bursts()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let mut first = start_orchestrator_with(&env, free_port()?, &FAST).await?;
    register(&first.client, "job", "  - name: job\n    handler: noop\n").await?;
    first
        .client
        .put_schedule(&every_second("outage", "job", Overlap::Allow, "4s"))
        .await?;
    let client = first.client.clone();
    until(Duration::from_secs(10), "two fires", || async {
        Ok(client.schedule("timed", "outage").await?.fires >= 2)
    })
    .await?;
    first.child.start_kill()?;
    first.child.wait().await?;
    let down = Utc::now();
    // Every orchestrator down for 10 s, more than twice the window.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let second = start_orchestrator_with(&env, free_port()?, &FAST).await?;
    let up = Utc::now();
    let client = second.client.clone();
    until(Duration::from_secs(20), "caught up", || async {
        let s = client.schedule("timed", "outage").await?;
        Ok(s.skipped > 0 && s.next_fire_at.is_some_and(|n| n > Utc::now()))
    })
    .await?;
    client.pause_schedule("timed", "outage", None).await?;
    let s = client.schedule("timed", "outage").await?;
    let pool = sqlx::PgPool::connect(&env.config.database_url).await?;
    let fired = fires(&pool, "outage").await?;
    let (first_fire, last_fire) = (
        *fired.keys().next().expect("fires"),
        *fired.keys().last().expect("fires"),
    );
    let slots = (last_fire - first_fire).num_seconds() + 1;
    assert_eq!(
        fired.len() as i64 + s.skipped,
        slots,
        "every second from the first fire to the last was fired or skipped and counted"
    );
    // Nothing older than the window when the second orchestrator came up was fired after it.
    let window_start = up - chrono::Duration::seconds(5);
    for (nominal, at) in &fired {
        if *at > up {
            assert!(
                *nominal >= window_start - chrono::Duration::seconds(1),
                "fired {nominal} after the outage, outside its window (up at {up})"
            );
        }
    }
    assert!(
        s.skipped >= 4,
        "skipped {} of a 10 s outage with a 4 s window",
        s.skipped
    );
    // The catch-up came one fire after another (one a timer pass, passes paced 100 ms apart
    // or at a sweep): never three within 100 ms.
    let after: Vec<DateTime<Utc>> = fired
        .iter()
        .filter(|(n, at)| **n > down - chrono::Duration::seconds(1) && **at > up)
        .map(|(_, at)| *at)
        .collect();
    let mut created = after.clone();
    created.sort();
    for w in created.windows(3) {
        assert!(
            w[2] - w[0] >= chrono::Duration::milliseconds(100),
            "a burst: {created:?}"
        );
    }
    eprintln!(
        "outage of {}: {} fires skipped and counted, {} caught up one after another",
        up - down,
        s.skipped,
        after.len()
    );
    pool.close().await;
    drop(second);
    env.cleanup().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_task_on_a_one_second_schedule_never_overlaps_and_buffers_at_most_one()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o.client, "long", "  - name: work\n    wait: {sleep: 3s}\n").await?;
    o.client
        .put_schedule(&every_second("skipping", "long", Overlap::Skip, "1h"))
        .await?;
    o.client
        .put_schedule(&every_second("buffering", "long", Overlap::BufferOne, "1h"))
        .await?;
    // Long enough for three tasks of three seconds in a row.
    tokio::time::sleep(Duration::from_secs(10)).await;
    o.client.pause_schedule("timed", "skipping", None).await?;
    o.client.pause_schedule("timed", "buffering", None).await?;
    let pool = sqlx::PgPool::connect(&env.config.database_url).await?;
    for name in ["skipping", "buffering"] {
        let runs: Vec<(Uuid, DateTime<Utc>, Option<DateTime<Utc>>)> = sqlx::query_as(
            "SELECT t.id, t.created_at, t.completed_at FROM tasks t JOIN schedules s
                 ON t.idempotency_key LIKE 'schedule:' || s.id || ':%'
             WHERE s.name = $1 ORDER BY t.created_at",
        )
        .bind(name)
        .fetch_all(&pool)
        .await?;
        assert!(runs.len() >= 2, "{name}: {runs:?}");
        for w in runs.windows(2) {
            let ended = w[0]
                .2
                .expect("an earlier task ended before the next started");
            assert!(w[1].1 >= ended, "{name}: two tasks at once: {runs:?}");
            if name == "buffering" {
                // The buffered fire starts as soon as the one before ends (the next pass).
                assert!(
                    w[1].1 - ended < chrono::Duration::milliseconds(1500),
                    "{name}: the buffered fire waited {} after its task ended",
                    w[1].1 - ended
                );
            }
        }
        let s = o.client.schedule("timed", name).await?;
        assert!(s.skipped > 0, "{name}: {s:?}");
        eprintln!(
            "{name}: {} tasks in a row, {} fires skipped",
            runs.len(),
            s.skipped
        );
    }
    pool.close().await;
    o.stop().await;
    env.cleanup().await
}

/// Waits for `n` sweeps of the orchestrator.
async fn sweeps_of(
    sweeps: &mut tokio::sync::broadcast::Receiver<tasker_orchestration::events::Event>,
    n: usize,
) -> anyhow::Result<()> {
    for _ in 0..n {
        while !matches!(
            sweeps.recv().await?,
            tasker_orchestration::events::Event::Swept
        ) {}
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_sleeping_tasks_cost_an_idle_orchestrator_one_indexed_query_a_tick()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let o = env.orchestrator().await?;
    register(&o.client, "hour", "  - name: nap\n    wait: {sleep: 1h}\n").await?;
    let pool = sqlx::PgPool::connect(&env.config.database_url).await?;
    for _ in 0..10_000 {
        o.client
            .create_task(&CreateTask::new("timed", "hour"))
            .await?;
    }
    let sleeping: i64 = sqlx::query_scalar("SELECT count(*) FROM steps s WHERE tasker_held(s)")
        .fetch_one(&pool)
        .await?;
    assert_eq!(sleeping, 10_000);
    sqlx::query("ANALYZE steps").execute(&pool).await?;
    // Rows read from the steps table by sequential scans, and from each partial index of
    // steps in flight (cumulative; each backend reports its counts within a second or so).
    let read = |pool: sqlx::PgPool| async move {
        let table: i64 = sqlx::query_scalar(
            "SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'steps'",
        )
        .fetch_one(&pool)
        .await?;
        let waking: i64 = sqlx::query_scalar(
            "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'steps_waking'",
        )
        .fetch_one(&pool)
        .await?;
        let sent: i64 = sqlx::query_scalar(
            "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'steps_sent'",
        )
        .fetch_one(&pool)
        .await?;
        anyhow::Ok([table, waking, sent])
    };
    let mut sweeps = o.events().subscribe();
    // Settle (the creations' own counts are reported), then measure 20 idle ticks, then let
    // their counts be reported.
    sweeps_of(&mut sweeps, 10).await?;
    let before = read(pool.clone()).await?;
    sweeps_of(&mut sweeps, 30).await?;
    let after = read(pool.clone()).await?;
    let plan: Vec<String> = sqlx::query_scalar(
        "EXPLAIN (ANALYZE, COSTS OFF)
         SELECT id FROM steps s WHERE tasker_held(s)
           AND wake_at <= now() ORDER BY wake_at LIMIT 500",
    )
    .fetch_all(&pool)
    .await?;
    let delta: Vec<i64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    eprintln!(
        "10,000 sleeping, the next 30 idle ticks: rows read by sequential scans of steps {}, from \
         steps_waking {}, from steps_sent {}; the timer's due query:\n{}",
        delta[0],
        delta[1],
        delta[2],
        plan.join("\n")
    );
    assert!(
        delta[0] < 10_000,
        "an idle tick read the sleeping steps: {delta:?}"
    );
    assert!(delta[1] < 100 && delta[2] < 100, "{delta:?}");
    assert!(
        plan.iter()
            .any(|l| l.contains("Index") && l.contains("steps_waking")),
        "{plan:?}"
    );
    pool.close().await;
    o.stop().await;
    env.cleanup().await
}
