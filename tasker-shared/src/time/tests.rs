use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::*;

fn ny(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
    let tz: Tz = "America/New_York".parse().expect("a zone");
    tz.with_ymd_and_hms(y, m, d, h, min, 0)
        .earliest()
        .expect("a local time")
        .with_timezone(&Utc)
}

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().expect("an RFC 3339 time")
}

/// Runs a schedule on a simulated clock from `from` to `to`, ticking every `tick` the way the
/// orchestrator's timer does (`due`, fire, advance), and returns the nominal times fired.
fn run_clock(
    cron: &Cron,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    tick: chrono::Duration,
) -> Vec<DateTime<Utc>> {
    let mut next = cron.next_after(from);
    let mut fired = Vec::new();
    let mut now = from;
    while now <= to {
        // Every fire due at this tick, one after another, as consecutive timer passes would.
        while let Some(n) = next {
            let due = cron.due(n, now, DEFAULT_CATCH_UP);
            if due.fire.is_none() {
                next = due.next;
                break;
            }
            assert_eq!(due.skipped, 0);
            fired.push(due.fire.expect("a fire"));
            next = due.next;
        }
        now += tick;
    }
    fired
}

#[test]
fn a_fixed_time_in_the_skipped_hour_fires_once_right_after_the_jump() {
    // 2026-03-08: New York's clocks jump from 02:00 EST to 03:00 EDT.
    let cron = Cron::parse("30 2 * * *", "America/New_York").expect("valid");
    let fired = run_clock(
        &cron,
        ny(2026, 3, 7, 12, 0),
        ny(2026, 3, 9, 12, 0),
        chrono::Duration::minutes(1),
    );
    assert_eq!(
        fired,
        vec![
            ny(2026, 3, 8, 3, 0), // the jump: 07:00Z
            ny(2026, 3, 9, 2, 30),
        ]
    );
    assert_eq!(fired[0], utc("2026-03-08T07:00:00Z"));
}

#[test]
fn a_fixed_time_fires_once_on_the_fall_back_day() {
    // 2026-11-01: clocks go back from 02:00 EDT to 01:00 EST; 01:xx happens twice.
    for (expr, want) in [
        ("30 2 * * *", utc("2026-11-01T07:30:00Z")),
        ("30 1 * * *", utc("2026-11-01T05:30:00Z")),
    ] {
        let cron = Cron::parse(expr, "America/New_York").expect("valid");
        let fired = run_clock(
            &cron,
            utc("2026-11-01T00:00:00Z"),
            utc("2026-11-02T00:00:00Z"),
            chrono::Duration::minutes(1),
        );
        assert_eq!(fired, vec![want], "{expr}");
    }
}

#[test]
fn an_hourly_job_follows_the_clock_that_passes() {
    let cron = Cron::parse("30 * * * *", "America/New_York").expect("valid");
    // Fall back: 01:30 EDT and 01:30 EST both pass, an hour apart.
    let fall = cron.upcoming(utc("2026-11-01T04:00:00Z"), 4);
    assert_eq!(
        fall,
        vec![
            utc("2026-11-01T04:30:00Z"),
            utc("2026-11-01T05:30:00Z"),
            utc("2026-11-01T06:30:00Z"),
            utc("2026-11-01T07:30:00Z"),
        ]
    );
    // Spring forward: 02:30 never happens; the hour is simply gone.
    let spring = cron.upcoming(utc("2026-03-08T06:00:00Z"), 2);
    assert_eq!(
        spring,
        vec![utc("2026-03-08T06:30:00Z"), utc("2026-03-08T07:30:00Z")]
    );
}

#[test]
fn six_fields_have_seconds_and_utc_is_the_default() {
    let cron = Cron::parse("*/10 * * * * *", "UTC").expect("valid");
    assert_eq!(
        cron.upcoming(utc("2026-01-01T00:00:01Z"), 3),
        vec![
            utc("2026-01-01T00:00:10Z"),
            utc("2026-01-01T00:00:20Z"),
            utc("2026-01-01T00:00:30Z"),
        ]
    );
}

#[test]
fn bad_expressions_and_zones_name_their_field() {
    for (expr, tz, field) in [
        ("* * * *", "UTC", "cron"),
        ("* * * * * * *", "UTC", "cron"),
        ("61 * * * *", "UTC", "cron"),
        ("* * * * *", "Mars/Olympus", "timezone"),
        ("* * * * *", "", "timezone"),
    ] {
        let e = Cron::parse(expr, tz).expect_err(expr);
        assert_eq!(e.field, field, "{expr} in {tz}: {e}");
    }
}

#[test]
fn a_long_outage_skips_and_counts_what_is_outside_the_window() {
    let cron = Cron::parse("* * * * * *", "UTC").expect("valid");
    let first = utc("2026-01-01T00:00:00Z");
    // Down 100 s with a 30 s window: the fires of 00:00:00 through 00:01:09 (70) are skipped.
    let now = utc("2026-01-01T00:01:40Z");
    let due = cron.due(first, now, Duration::from_secs(30));
    assert_eq!(due.skipped, 70);
    assert_eq!(due.fire, Some(utc("2026-01-01T00:01:10Z")));
    assert_eq!(due.next, Some(utc("2026-01-01T00:01:11Z")));
    // Nothing is due before its time.
    let later = cron.due(utc("2026-01-01T00:05:00Z"), now, Duration::from_secs(30));
    assert_eq!(later.fire, None);
    assert_eq!(later.skipped, 0);
}

#[test]
fn durations_are_bounded() {
    assert_eq!(
        parse_duration("sleep", "1h30m"),
        Ok(Duration::from_secs(5400))
    );
    assert!(parse_duration("sleep", "366d").is_err());
    assert!(parse_duration("sleep", "-1s").is_err());
    assert!(parse_duration("sleep", "soon").is_err());
    assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
}

#[test]
fn wait_specs_compile_or_name_the_field() {
    let sleep = WaitSpec {
        sleep: Some("3s".into()),
        ..WaitSpec::default()
    };
    assert_eq!(
        sleep.compile("steps.a.wait").expect("valid"),
        serde_json::json!({"kind": "sleep", "ms": 3000})
    );
    let signal = WaitSpec {
        signal: Some("approved".into()),
        on_timeout: Some(OnTimeout::Skip),
        ..WaitSpec::default()
    };
    assert_eq!(
        signal.compile("w").expect("valid")["timeout_ms"],
        DEFAULT_SIGNAL_TIMEOUT.as_millis() as u64
    );
    let until = WaitSpec {
        until: Some("/a~1b/c".into()),
        ..WaitSpec::default()
    };
    assert_eq!(
        until.compile("w").expect("valid")["path"],
        serde_json::json!(["a/b", "c"])
    );
    let event = WaitSpec {
        event: Some("payment.settled".into()),
        correlate: [("/data/order".to_owned(), "/context/order/id".to_owned())].into(),
        ..WaitSpec::default()
    };
    assert_eq!(
        event.compile("w").expect("valid"),
        serde_json::json!({
            "kind": "event", "event": "payment.settled", "signal": "event:payment.settled",
            "match": [[["data", "order"], ["order", "id"]]],
            "timeout_ms": DEFAULT_SIGNAL_TIMEOUT.as_millis() as u64, "on_timeout": "fail",
        })
    );
    let matching = |from: &str, to: &str| WaitSpec {
        event: Some("paid".into()),
        correlate: [(from.to_owned(), to.to_owned())].into(),
        ..WaitSpec::default()
    };
    for (bad, field) in [
        (matching("/context/a", "/context/a"), "w.match./context/a"),
        (matching("/data/a", "/data/a"), "w.match./data/a"),
        (matching("/key", "/context"), "w.match./key"),
        (
            WaitSpec {
                signal: Some("x".into()),
                correlate: [("/key".to_owned(), "/context/k".to_owned())].into(),
                ..WaitSpec::default()
            },
            "w.match",
        ),
        (
            WaitSpec {
                sleep: Some("1s".into()),
                signal: Some("x".into()),
                ..WaitSpec::default()
            },
            "w",
        ),
        (WaitSpec::default(), "w"),
        (
            WaitSpec {
                sleep: Some("1s".into()),
                timeout: Some("1s".into()),
                ..WaitSpec::default()
            },
            "w.timeout",
        ),
        (
            WaitSpec {
                signal: Some("no spaces".into()),
                ..WaitSpec::default()
            },
            "w.signal",
        ),
        (
            WaitSpec {
                until: Some("due_at".into()),
                ..WaitSpec::default()
            },
            "w.until",
        ),
        (
            WaitSpec {
                signal: Some("ok".into()),
                timeout: Some("400d".into()),
                ..WaitSpec::default()
            },
            "w.timeout",
        ),
    ] {
        assert_eq!(bad.compile("w").expect_err("refused").field, field);
    }
}
