//! The batch host's unit tests.

use super::*;
use crate::host::Report;
use serde_json::json;
use std::sync::Arc;

fn job(id: u64) -> Job {
    Job::new(
        id,
        StepMessage {
            step_name: format!("s{id}"),
            context: json!({"value": id}),
            timeout_ms: 1000,
            ..crate::test_support::test_message()
        },
    )
}

#[test]
fn blocking_wait_wakes_on_submit_and_respects_max() {
    let host = Arc::new(BatchHost::new());
    let (sink, mut rx) = CompletionSink::channel();
    let waiter = {
        let host = host.clone();
        std::thread::spawn(move || host.next_batch(2, Duration::from_secs(10)))
    };
    host.submit(vec![job(1), job(2), job(3)], &sink);
    let batch = waiter.join().unwrap();
    assert_eq!(batch.iter().map(|j| j.id).collect::<Vec<_>>(), vec![1, 2]);
    let rest = host.next_batch(10, Duration::from_secs(1));
    assert_eq!(rest.len(), 1);
    host.complete_json(r#"[{"id": 3, "status": "success", "result": {"ok": true}}]"#)
        .unwrap();
    // Handing a job to the language side starts its clock; then its completion.
    let mut started = Vec::new();
    let c = loop {
        match rx.try_recv().unwrap() {
            Report::Started(job) => started.push(job),
            Report::Done(c) => break c,
            Report::Unstarted(job) => panic!("job {job} reported unstarted"),
            Report::Over(job) => panic!("job {job} reported over"),
        }
    };
    assert_eq!(started, vec![1, 2, 3]);
    assert_eq!(c.job, 3);
    assert_eq!(
        c.outcome,
        Outcome::Success {
            result: json!({"ok": true})
        }
    );
}

#[test]
fn outcome_times_are_epoch_seconds_or_rfc3339_text() {
    let parse = |json: &str| serde_json::from_str::<Vec<OutcomeView>>(json);
    let o = parse(
        r#"[{"id": 1, "status": "success", "result": 1,
             "started_at": 1764140400.25, "finished_at": "2025-11-26T07:00:00.5Z"}]"#,
    )
    .unwrap();
    assert_eq!(
        o[0].started_at.unwrap().to_rfc3339(),
        "2025-11-26T07:00:00.250+00:00"
    );
    assert_eq!(
        o[0].finished_at.unwrap().to_rfc3339(),
        "2025-11-26T07:00:00.500+00:00"
    );
    let o = parse(r#"[{"id": 1, "status": "success", "result": 1, "started_at": null}]"#).unwrap();
    assert!(o[0].started_at.is_none() && o[0].finished_at.is_none());
    for bad in ["1e300", "\"yesterday\"", "true"] {
        let json =
            format!(r#"[{{"id": 1, "status": "success", "result": 1, "started_at": {bad}}}]"#);
        assert!(parse(&json).is_err(), "{bad} was taken as a time");
    }
}

#[test]
fn empty_wait_times_out_and_bad_outcomes_are_rejected() {
    let host = BatchHost::new();
    assert!(host.next_batch(4, Duration::from_millis(20)).is_empty());
    let (sink, _rx) = CompletionSink::channel();
    host.submit(vec![], &sink);
    assert!(
        host.complete_json(r#"[{"id": 1, "status": "maybe"}]"#)
            .is_err()
    );
    assert!(host.complete_json("not json").is_err());
}

#[test]
fn draining_hands_out_nothing_more_but_takes_outcomes_of_jobs_already_out() {
    let host = BatchHost::new();
    let (sink, mut rx) = CompletionSink::channel();
    host.submit(vec![job(1), job(2), job(3)], &sink);
    let out = host.next_batch(1, Duration::from_secs(1));
    assert_eq!(out[0].id, 1);
    host.drain(&sink);
    assert!(host.is_stopped());
    assert!(
        host.next_batch(10, Duration::from_secs(10)).is_empty(),
        "returns at once"
    );
    host.submit(vec![job(4)], &sink);
    host.complete_json(r#"[{"id": 1, "status": "success", "result": 1}]"#)
        .unwrap();
    let mut unstarted = Vec::new();
    let mut done = Vec::new();
    while let Ok(report) = rx.try_recv() {
        match report {
            Report::Started(_) => {}
            Report::Done(c) => done.push(c.job),
            Report::Unstarted(job) => unstarted.push(job),
            Report::Over(job) => panic!("job {job} reported over"),
        }
    }
    assert_eq!(unstarted, vec![2, 3, 4], "queued and later jobs go back");
    assert_eq!(done, vec![1], "the job already out still reports");
}

#[test]
fn the_ready_hook_tells_of_queued_jobs_and_the_stop_and_try_take_never_waits() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let host = Arc::new(BatchHost::new());
    let (sink, _rx) = CompletionSink::channel();
    assert!(host.try_take(4).is_empty(), "nothing queued: empty at once");
    let calls = Arc::new(AtomicUsize::new(0));
    let (counted, weak) = (calls.clone(), Arc::downgrade(&host));
    host.on_ready(move || {
        // Called without the host's lock: the hook may use the host.
        if let Some(host) = weak.upgrade() {
            let _ = host.is_stopped();
        }
        counted.fetch_add(1, SeqCst);
    });
    host.submit(vec![job(1), job(2), job(3)], &sink);
    assert_eq!(calls.load(SeqCst), 1);
    let first = host.try_take(2);
    assert_eq!(first.iter().map(|j| j.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(host.try_take(8)[0].id, 3);
    assert!(host.try_take(8).is_empty());
    host.stop();
    assert_eq!(calls.load(SeqCst), 2, "told of the stop");
    host.submit(vec![job(4)], &sink);
    assert!(
        host.try_take(8).is_empty(),
        "a stopped host hands nothing out"
    );
}

#[test]
fn a_job_is_held_from_its_hand_out_until_its_outcome_or_its_timeout() {
    let host = BatchHost::new();
    let (sink, _rx) = CompletionSink::channel();
    let short = Job::new(
        2,
        StepMessage {
            timeout_ms: 0,
            ..crate::test_support::test_message()
        },
    );
    host.submit(vec![job(1), short], &sink);
    assert!(!host.holds(1), "queued, not handed out");
    assert_eq!(host.next_batch(2, Duration::from_secs(1)).len(), 2);
    assert!(host.holds(1) && !host.holds(99));
    host.complete_json(r#"[{"id": 1, "status": "success", "result": 1}]"#)
        .unwrap();
    assert!(!host.holds(1), "reported");
    // Job 2's timeout is 0: the core fails it at its run deadline (the 250 ms margin).
    let give_up = Instant::now() + Duration::from_secs(5);
    while host.holds(2) {
        assert!(
            Instant::now() < give_up,
            "still held 5 s after its deadline"
        );
        std::thread::yield_now();
    }
    assert!(!host.holds(2), "timed out stays out");
}

#[test]
fn stop_releases_waiters() {
    let host = Arc::new(BatchHost::new());
    let waiter = {
        let host = host.clone();
        std::thread::spawn(move || host.next_batch(1, Duration::from_secs(30)))
    };
    host.stop();
    assert!(waiter.join().unwrap().is_empty());
    assert!(host.is_stopped());
}

#[tokio::test]
async fn async_wait_wakes_on_submit() {
    let host = Arc::new(BatchHost::new());
    let (sink, _rx) = CompletionSink::channel();
    let waiter = {
        let host = host.clone();
        tokio::spawn(async move { host.next_batch_async(8, Duration::from_secs(10)).await })
    };
    tokio::task::yield_now().await;
    host.submit(vec![job(5)], &sink);
    let batch = waiter.await.unwrap();
    assert_eq!(batch[0].id, 5);
    assert_eq!(batch[0].step.context, json!({"value": 5}));
    let wire = serde_json::to_value(&batch[0]).unwrap();
    assert_eq!(wire["id"], 5);
    assert_eq!(wire["step_name"], "s5");
}

#[test]
fn high_jobs_go_first_and_low_ones_leave_room_under_their_cap() {
    use tasker_shared::flow::Priority;
    let host = Arc::new(BatchHost::new().with_priorities(Duration::from_secs(10), Some(2)));
    let (sink, _rx) = CompletionSink::channel();
    let with = |id, p: Priority| {
        let mut j = job(id);
        j.message.priority = Some(p).filter(|p| !p.is_normal());
        j
    };
    host.submit((1..=4).map(|i| with(i, Priority::Low)).collect(), &sink);
    let ids = |b: Vec<JobView>| b.iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(host.next_batch(10, Duration::from_secs(1))),
        [1, 2],
        "two low at most"
    );
    // Only low work waits, at its cap: a wait runs out empty instead of spinning.
    assert!(host.next_batch(10, Duration::from_millis(50)).is_empty());
    host.submit(
        vec![with(5, Priority::Normal), with(6, Priority::High)],
        &sink,
    );
    assert_eq!(
        ids(host.try_take(10)),
        [6, 5],
        "high first, and neither held by the cap"
    );
    // A low job reported frees a place, and a waiter blocked on the cap wakes for it.
    let waiter = {
        let host = host.clone();
        std::thread::spawn(move || host.next_batch(10, Duration::from_secs(10)))
    };
    host.complete_json(r#"[{"id": 1, "status": "success", "result": 1}]"#)
        .unwrap();
    assert_eq!(ids(waiter.join().unwrap()), [3]);
}
