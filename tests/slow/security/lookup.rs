//! A task found by the start of its id or by its idempotency key (`GET /v1/tasks?id_prefix=`,
//! `?idempotency_key=`): a token of one namespace never finds another namespace's task by
//! either, not even by its exact key or whole id; nor does its idempotency key answer or hold
//! back a request of another namespace.

use tasker_client::{CreateTask, TaskQuery};
use tasker_orchestration::store::Scope;

use super::common::{client, pair, register, token, with_tokens};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_by_id_prefix_or_key_never_reaches_another_namespace() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for ns in ["team_a", "team_b"] {
        let (status, code) = register(&o, &root, &pair(ns)).await;
        assert!(status.is_success(), "{ns}: {status} {code}");
    }
    let mut request = CreateTask::new("team_b", "pair").idempotency_key("their-key");
    request.delay = Some("1h".into());
    let theirs = client(&o, &root).create_task(&request).await?;
    let reader_a = client(
        &o,
        &token(&o, "reader-a", Scope::Read, Some("team_a")).await?,
    );
    let id = theirs.id.to_string();
    for query in [
        TaskQuery {
            id_prefix: Some(id.clone()),
            ..TaskQuery::default()
        },
        TaskQuery {
            id_prefix: Some(id[..8].to_owned()),
            ..TaskQuery::default()
        },
        TaskQuery {
            idempotency_key: Some("their-key".into()),
            ..TaskQuery::default()
        },
    ] {
        let page = reader_a.tasks(&query).await?;
        assert!(page.tasks.is_empty(), "{query:?} reached {:?}", page.tasks);
    }
    // The same lookups with a token of team_b find it: the filters work, the scope holds.
    let reader_b = client(
        &o,
        &token(&o, "reader-b", Scope::Read, Some("team_b")).await?,
    );
    let found = reader_b
        .tasks(&TaskQuery {
            idempotency_key: Some("their-key".into()),
            ..TaskQuery::default()
        })
        .await?;
    assert_eq!(
        found.tasks.iter().map(|t| t.id).collect::<Vec<_>>(),
        [theirs.id]
    );
    o.stop().await;
    env.cleanup().await
}

/// An idempotency key (or a dedupe window's) is its namespace's own: another namespace's task
/// with the same key neither answers a request (which would hand over its id) nor holds it
/// back with a `409` naming that task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_namespaces_key_never_answers_or_holds_back_a_request() -> anyhow::Result<()> {
    let (env, root) = with_tokens().await?;
    let o = env.orchestrator().await?;
    for ns in ["team_a", "team_b"] {
        let (status, code) = register(&o, &root, &pair(ns)).await;
        assert!(status.is_success(), "{ns}: {status} {code}");
    }
    let later = |mut r: CreateTask| {
        r.delay = Some("1h".into());
        r
    };
    let keyed = |ns: &str| later(CreateTask::new(ns, "pair").idempotency_key("shared-key"));
    let windowed = |ns: &str| later(CreateTask::new(ns, "pair").dedupe("shared-window", "1h"));
    let root_client = client(&o, &root);
    let theirs = [
        root_client.create_task(&keyed("team_b")).await?,
        root_client.create_task(&windowed("team_b")).await?,
    ];
    let writer_a = client(
        &o,
        &token(&o, "writer-a", Scope::Write, Some("team_a")).await?,
    );
    for (request, their) in [keyed("team_a"), windowed("team_a")].iter().zip(&theirs) {
        let mine = writer_a.create_task(request).await?;
        assert_ne!(mine.id, their.id, "{request:?} answered team_b's task");
        assert_eq!(mine.namespace, "team_a");
        // Within one namespace the key still answers its own task.
        assert_eq!(writer_a.create_task(request).await?.id, mine.id);
    }
    // And team_b's keys still answer team_b's tasks.
    assert_eq!(
        root_client.create_task(&keyed("team_b")).await?.id,
        theirs[0].id
    );
    assert_eq!(
        root_client.create_task(&windowed("team_b")).await?.id,
        theirs[1].id
    );
    o.stop().await;
    env.cleanup().await
}
