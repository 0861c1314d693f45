//! Alerts out: every orchestrator checks the rules due every second — each rule in one
//! transaction at a time, as the token that saved it (looked up again: revoked, expired or no
//! longer covering the rule's namespace, the rule is not checked and says why) — counts its
//! condition, and queues a notice when it begins to hold (`firing`, unless one went out within
//! the suppression window) and when it clears (`resolved`, when its firing was told). The
//! notices go out on a loop of their own ([`send`]), off every engine path: a dead sink delays
//! nothing but its own notices.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use tasker_shared::api::{AlertCondition, AlertKind, AlertNotice};
use tasker_shared::time::parse_duration;

use crate::metrics as m;
use crate::shared::Shared;
use crate::store::{self, Checked, DueRule};

mod email;
pub(crate) mod send;

/// Rules checked per transaction.
const CHECK_BATCH: i64 = 50;
/// The longest window a condition counts back.
const MAX_WINDOW: Duration = Duration::from_secs(86_400);

/// A condition's numbers, its defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Terms {
    pub count: i64,
    pub within_ms: i64,
    pub longer_than_ms: i64,
}

/// `c`'s numbers; Err: the field and what is wrong with it.
pub fn terms(c: &AlertCondition) -> Result<Terms, (&'static str, String)> {
    let window =
        |field: &'static str, text: &Option<String>| -> Result<i64, (&'static str, String)> {
            let d = match text {
                None => Duration::from_secs(300),
                Some(t) => parse_duration(field, t).map_err(|e| (field, e.problem.clone()))?,
            };
            if d.is_zero() || d > MAX_WINDOW {
                return Err((field, "must be more than 0s and at most 1 day".into()));
            }
            Ok(d.as_millis() as i64)
        };
    let count = i64::from(c.count.unwrap_or(1));
    if !(1..=1_000_000).contains(&count) {
        return Err(("count", "must be 1 to 1000000".into()));
    }
    let (filter, allowed) = match c.kind {
        AlertKind::Failures | AlertKind::DeadlinePassed => ("schedule", c.schedule.is_none()),
        AlertKind::ScheduleSkipped => ("template", c.template.is_none()),
        AlertKind::DeadLetters | AlertKind::StepsWaiting => (
            if c.template.is_some() {
                "template"
            } else {
                "schedule"
            },
            c.template.is_none() && c.schedule.is_none(),
        ),
    };
    if !allowed {
        return Err((filter, format!("is not a filter of `{}`", c.kind.as_str())));
    }
    let waiting = c.kind == AlertKind::StepsWaiting;
    if waiting && c.within.is_some() {
        return Err((
            "within",
            "`steps_waiting` counts steps waiting now: use `longer_than`".into(),
        ));
    }
    if !waiting && c.longer_than.is_some() {
        return Err((
            "longer_than",
            format!("is not a term of `{}`: use `within`", c.kind.as_str()),
        ));
    }
    Ok(Terms {
        count,
        within_ms: window("within", &c.within)?,
        longer_than_ms: window("longer_than", &c.longer_than)?,
    })
}

/// What a check of a rule that `was_firing` decides when its condition `holds` now: it begins
/// to fire (told, unless the last firing notice went out less than `suppress` ago), clears (told
/// when its firing was), or stays as it was.
pub fn decide(rule: &DueRule, holds: bool, now: DateTime<Utc>) -> Checked {
    let mut c = Checked {
        firing: holds,
        notified: rule.notified,
        ..Checked::default()
    };
    if holds && !rule.firing {
        c.began = true;
        let quiet = rule
            .noticed_at
            .is_none_or(|at| (now - at).num_milliseconds() >= rule.suppress_ms);
        c.notified = quiet;
        c.suppressed = !quiet;
    } else if !holds && rule.firing {
        c.cleared = true;
        c.notified = false;
    }
    c
}

/// The checks loop of an orchestrator: every second (its notices go out on
/// [`send::run`], a task of the orchestrator's own beside it, so nothing outlives a stop or an
/// abort of the orchestrator).
pub(crate) async fn run(shared: Shared, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(store::CHECK_EVERY_MS as u64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => {}
        }
        match check_due(&shared).await {
            Ok(0) => {}
            Ok(_) => shared.alert_notices.notify_one(),
            Err(e) => tracing::warn!(error = %e, "could not check the alert rules"),
        }
    }
}

/// Checks every rule due, a batch per transaction; how many notices it queued.
async fn check_due(shared: &Shared) -> Result<usize, store::Error> {
    let mut queued = 0;
    loop {
        let mut checks = shared.store.due_alerts(CHECK_BATCH).await?;
        let due = std::mem::take(&mut checks.due);
        for rule in &due {
            if let Some(why) = refused(shared, rule).await? {
                checks.pause(rule, &why).await?;
                continue;
            }
            let Ok(t) = terms(&rule.condition) else {
                checks.pause(rule, "its condition no longer reads").await?;
                continue;
            };
            let observed = checks.observe(rule, t.within_ms, t.longer_than_ms).await?;
            let now = Utc::now();
            let mut c = decide(rule, observed >= t.count, now);
            c.observed = observed;
            if c.began {
                ::metrics::counter!(m::ALERTS_FIRED.name, "kind" => rule.condition.kind.as_str())
                    .increment(1);
            }
            let state = match (c.began && c.notified, c.cleared && rule.notified) {
                (true, _) => Some("firing"),
                (_, true) => Some("resolved"),
                _ => None,
            };
            if let Some(state) = state {
                // A notice is plain data: it always serializes.
                c.notice = serde_json::to_value(notice(rule, &t, observed, state, now)).ok();
                queued += 1;
            }
            checks.record(rule, &c).await?;
        }
        checks.commit().await?;
        if (due.len() as i64) < CHECK_BATCH {
            return Ok(queued);
        }
    }
}

/// Why the token that saved `rule` may not have it checked now; `None`: it may.
async fn refused(shared: &Shared, rule: &DueRule) -> Result<Option<String>, store::Error> {
    let Some(id) = rule.token_id else {
        return Ok(None);
    };
    Ok(match shared.store.principal_by_id(id).await? {
        None => Some(format!(
            "the API token that saved it (id {id}) has been revoked or has expired"
        )),
        Some(p) if !p.covers(&rule.namespace) => Some(format!(
            "the API token that saved it ({:?}) no longer covers namespace {:?}",
            p.name, rule.namespace
        )),
        Some(_) => None,
    })
}

fn notice(rule: &DueRule, t: &Terms, observed: i64, state: &str, at: DateTime<Utc>) -> AlertNotice {
    let c = &rule.condition.0;
    let what = match c.kind {
        AlertKind::Failures => "tasks ended in error",
        AlertKind::DeadlinePassed => "tasks past their deadline",
        AlertKind::ScheduleSkipped => "schedules skipped a fire",
        AlertKind::DeadLetters => "dead letters kept",
        AlertKind::StepsWaiting => "steps waiting",
    };
    let scope = c
        .template
        .as_deref()
        .or(c.schedule.as_deref())
        .map_or_else(String::new, |f| format!(" ({f})"));
    let span = match c.kind {
        AlertKind::StepsWaiting => format!("longer than {}s", t.longer_than_ms / 1000),
        _ => format!("in the last {}s", t.within_ms / 1000),
    };
    let summary = format!(
        "[{}] {} {}: {observed} {what}{scope} {span} (fires at {})",
        rule.namespace,
        rule.name,
        if state == "firing" {
            "FIRING"
        } else {
            "resolved"
        },
        t.count
    );
    AlertNotice {
        alert: rule.name.clone(),
        namespace: rule.namespace.clone(),
        state: state.into(),
        when: c.clone(),
        observed,
        threshold: t.count,
        at,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::types::Json;

    fn rule(firing: bool, notified: bool, noticed_ago_ms: Option<i64>) -> DueRule {
        DueRule {
            name: "r".into(),
            namespace: "ns".into(),
            condition: Json(AlertCondition {
                kind: AlertKind::Failures,
                template: None,
                schedule: None,
                count: Some(5),
                within: Some("1m".into()),
                longer_than: None,
            }),
            token_id: None,
            firing,
            notified,
            noticed_at: noticed_ago_ms.map(|ms| Utc::now() - chrono::Duration::milliseconds(ms)),
            suppress_ms: 60_000,
        }
    }

    #[test]
    fn a_rule_is_told_once_per_firing_and_a_repeat_within_the_window_is_held_back() {
        let now = Utc::now();
        let first = decide(&rule(false, false, None), true, now);
        assert!(
            first.began && first.notified && !first.suppressed,
            "{first:?}"
        );
        let still = decide(&rule(true, true, Some(0)), true, now);
        assert!(
            !still.began && !still.cleared && still.notified,
            "{still:?}"
        );
        let cleared = decide(&rule(true, true, Some(10)), false, now);
        assert!(
            cleared.cleared && !cleared.notified && !cleared.firing,
            "{cleared:?}"
        );
        let again = decide(&rule(false, false, Some(30_000)), true, now);
        assert!(
            again.began && again.suppressed && !again.notified,
            "{again:?}"
        );
        let later = decide(&rule(false, false, Some(61_000)), true, now);
        assert!(later.notified && !later.suppressed, "{later:?}");
    }

    #[test]
    fn a_condition_reads_its_defaults_and_refuses_terms_of_another_kind() {
        let mut c = rule(false, false, None).condition.0;
        assert_eq!(
            terms(&c),
            Ok(Terms {
                count: 5,
                within_ms: 60_000,
                longer_than_ms: 300_000
            })
        );
        c.longer_than = Some("1m".into());
        assert_eq!(terms(&c).unwrap_err().0, "longer_than");
        c.longer_than = None;
        c.within = Some("2d".into());
        assert_eq!(terms(&c).unwrap_err().0, "within");
        c.within = None;
        c.schedule = Some("nightly".into());
        assert_eq!(terms(&c).unwrap_err().0, "schedule");
        c.schedule = None;
        c.count = Some(0);
        assert_eq!(terms(&c).unwrap_err().0, "count");
    }
}
