//! Start controls (`dedupe`, `debounce`): a token never opens or joins a burst, or a dedupe
//! window, of a template it could not start; a burst's task starts with the token of the
//! request whose context it carries, so joining a burst never borrows another's authority.

use serde_json::json;
use tasker_client::{CreateTask, DebounceMode, Error};
use tasker_orchestration::store::Scope;

use crate::common::{client, pair, register, tasks_in, token, with_tokens};

/// A template of `sec_a` whose only step starts `sec_b/pair`: only a token reaching both may
/// start it.
const REACHING: &str = "namespace: sec_a
name: reaching
version: 1.0.0
steps:
  - name: steal
    child: {namespace: sec_b, template: pair}
";

fn burst(namespace: &str, name: &str, n: i64) -> CreateTask {
    CreateTask::new(namespace, name)
        .context(json!({ "n": n }))
        .debounce("k", "1h", None, DebounceMode::Trailing)
}

fn forbidden(what: &str, answer: Result<tasker_client::Task, Error>) {
    match answer {
        Err(Error::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (403, "forbidden"), "{what}");
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_never_joins_a_burst_or_window_it_could_not_start() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for yaml in [pair("sec_a"), pair("sec_b"), REACHING.to_owned()] {
        let (status, code) = register(&o, &root, &yaml).await;
        assert!(status.is_success(), "{status} {code}");
    }
    let writer_a = client(
        &o,
        &token(&o, "writer-a", Scope::Write, Some("sec_a")).await?,
    );
    // Another namespace's template: neither a burst nor a window opens.
    forbidden(
        "a debounce into sec_b",
        writer_a.create_task(&burst("sec_b", "pair", 1)).await,
    );
    forbidden(
        "a dedupe into sec_b",
        writer_a
            .create_task(&CreateTask::new("sec_b", "pair").dedupe("d", "1h"))
            .await,
    );
    // The root token opens a burst of the reaching template; sec_a's writer, which may not
    // start it (its child reaches sec_b), may not join it either: the task keeps the root's
    // context and token.
    let task = client(&o, &root)
        .create_task(&burst("sec_a", "reaching", 1))
        .await?;
    forbidden(
        "joining the reaching template's burst",
        writer_a.create_task(&burst("sec_a", "reaching", 2)).await,
    );
    let kept = client(&o, &root).task(task.id, None).await?;
    assert_eq!(
        (kept.state.to_string(), kept.context),
        ("scheduled".to_owned(), json!({ "n": 1 }))
    );
    // A burst of its own namespace's template it joins, and the task then carries its token.
    let own = client(&o, &root)
        .create_task(&burst("sec_a", "pair", 1))
        .await?;
    let joined = writer_a.create_task(&burst("sec_a", "pair", 2)).await?;
    assert_eq!(joined.id, own.id);
    let (token_of, writer): (Option<i64>, i64) = sqlx::query_as(
        "SELECT (SELECT token_id FROM tasks WHERE id = $1),
                (SELECT id FROM api_tokens WHERE name = 'writer-a')",
    )
    .bind(own.id)
    .fetch_one(o.shared.store.pool())
    .await?;
    assert_eq!(
        token_of,
        Some(writer),
        "the burst's task runs with its last request's token"
    );
    assert_eq!(tasks_in(&o, "sec_b").await?, 0);
    o.stop().await;
    env.cleanup().await
}
