//! Every metric family an orchestrator declares is on its `/metrics` page from the start, at
//! zero (an empty histogram), before any event: a query or an alert on it reads 0, not nothing.

use tasker::TestEnv;

use super::json_orchestrator;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_family_is_on_the_page_from_the_start() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    let (mut child, _lines, url) = json_orchestrator(&env, &[]).await?;
    let page = reqwest::get(format!("{url}/metrics")).await?.text().await?;
    let mut missing = Vec::new();
    for m in tasker_orchestration::metrics::ALL
        .iter()
        .chain(&tasker_shared::metric::SHARED)
    {
        let typed = page.contains(&format!("# TYPE {} ", m.name));
        let sampled = page.lines().any(|line| {
            line.strip_prefix(m.name)
                .is_some_and(|rest| rest.starts_with([' ', '{', '_']))
        });
        if !(typed && sampled) {
            missing.push(m.name);
        }
    }
    assert!(
        missing.is_empty(),
        "absent from a fresh /metrics: {missing:?}\n{page}"
    );
    child.start_kill()?;
    child.wait().await?;
    env.cleanup().await
}
