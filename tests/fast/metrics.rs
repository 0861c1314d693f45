//! Every metric the orchestrator and the workers declare follows the naming conventions
//! (`tasker_` prefix, counters and only counters ending in `_total`, no name twice — the two
//! share one recorder when they run in one process).

#[test]
fn every_declared_metric_follows_the_conventions() {
    let mut all = tasker_orchestration::metrics::ALL.to_vec();
    all.extend(tasker_worker::metrics::ALL);
    tasker_shared::metric::check(&all).unwrap();
}
