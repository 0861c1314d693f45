//! A task's stream with its children's merged in (`children=true`; docs/streams.md): a parent
//! whose child starts a grandchild, each streaming, read live and afterwards — every task's
//! chunks once, in their order, at dense offsets of the parent's stream, each saying its task;
//! without `children` the parent's own only; the child's stream merges the grandchild's.

use std::collections::BTreeMap;

use serde_json::json;
use tasker_client::{CreateTask, StreamChunk, StreamQuery};
use uuid::Uuid;

use super::bare_env;
use super::streams::{STREAMING, follow_query, query};

/// Streams `count` chunks, then starts a child that streams `kid` chunks and starts a
/// grandchild (`streaming`) that streams `grand`.
const PARENT: &str = "namespace: rust_examples
name: stream_parent
version: '1'
steps:
  - name: say
    handler: stream_emitter
  - name: kid
    depends_on: [say]
    child:
      template: stream_kid
      context: {count: /context/kid, grand: /context/grand}
";

const KID: &str = "namespace: rust_examples
name: stream_kid
version: '1'
steps:
  - name: say
    handler: stream_emitter
  - name: grand
    depends_on: [say]
    child:
      template: streaming
      context: {count: /context/grand}
";

/// Each task's chunks as (text, end), in offset order.
fn by_task(chunks: &[StreamChunk]) -> BTreeMap<Uuid, Vec<(Option<String>, bool)>> {
    let mut tasks: BTreeMap<Uuid, Vec<_>> = BTreeMap::new();
    for c in chunks {
        tasks
            .entry(c.task_id)
            .or_default()
            .push((c.text.clone(), c.end));
    }
    tasks
}

/// `n` text chunks `t0` … then the end.
fn whole(n: usize) -> Vec<(Option<String>, bool)> {
    let mut v: Vec<_> = (0..n).map(|i| (Some(format!("t{i}")), false)).collect();
    v.push((None, true));
    v
}

/// The child task step `name` of task `id` started.
async fn child_of(o: &tasker::RunningOrchestrator, id: Uuid, name: &str) -> anyhow::Result<Uuid> {
    let steps = o.client.steps(id).await?;
    let step = steps.iter().find(|s| s.name == name);
    let child = step.and_then(|s| s.child.as_ref()?["task_id"].as_str()?.parse().ok());
    child.ok_or_else(|| anyhow::anyhow!("step {name} of {id} started no child"))
}

fn merged() -> StreamQuery {
    StreamQuery {
        children: true,
        ..query(Some(0), None, None)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_stream_merges_its_childrens_at_any_depth_when_asked() -> anyhow::Result<()> {
    let env = bare_env().await?;
    let o = env.orchestrator().await?;
    for (yaml, file) in [
        (STREAMING, "streaming.yaml"),
        (KID, "stream_kid.yaml"),
        (PARENT, "stream_parent.yaml"),
    ] {
        o.client.register_template(yaml, Some(file), None).await?;
    }
    let worker = env.rust_worker();
    let create = CreateTask::new("rust_examples", "stream_parent")
        .context(json!({"count": 2, "kid": 3, "grand": 4}));
    let parent = o.client.create_task(&create).await?.id;
    // Followed live from the start: every task's chunks, each once and in order, at dense
    // offsets of the parent's stream.
    let live = follow_query(&o, parent, &merged()).await?;
    let offsets: Vec<i64> = live.iter().map(|c| c.offset).collect();
    assert_eq!(offsets, (0..12).collect::<Vec<_>>(), "no gap, no duplicate");
    assert_eq!(o.wait(parent).await?.state.to_string(), "complete");
    let kid_task = child_of(&o, parent, "kid").await?;
    let grand_task = child_of(&o, kid_task, "grand").await?;
    let tasks = by_task(&live);
    assert_eq!(
        tasks,
        BTreeMap::from([
            (parent, whole(2)),
            (kid_task, whole(3)),
            (grand_task, whole(4))
        ])
    );
    // The same from the database once it ended, a page at a time.
    let page = o.client.read_stream(parent, &merged()).await?;
    assert_eq!((page.next, page.complete), (12, true));
    assert_eq!(page.chunks, live);
    // Without `children`: the parent's own chunks only; the offsets still count the others.
    let own = o
        .client
        .read_stream(parent, &query(Some(0), None, None))
        .await?;
    assert_eq!(by_task(&own.chunks), BTreeMap::from([(parent, whole(2))]));
    assert_eq!((own.next, own.complete), (12, true));
    // The child's stream merges the grandchild's, at its own offsets.
    let kids = o.client.read_stream(kid_task, &merged()).await?;
    assert_eq!(
        by_task(&kids.chunks),
        BTreeMap::from([(kid_task, whole(3)), (grand_task, whole(4))])
    );
    assert_eq!(kids.next, 9);
    worker.stop().await;
    o.stop().await;
    env.cleanup().await
}
