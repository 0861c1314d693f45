//! A graceful stop logs no error: closing a broker whose channels were just dropped (as every
//! session's end does) closes them before the connection, instead of leaving lapin to close
//! them while the connection is already closing, which it logged as a connection error
//! (`ERROR lapin::channels: Connection error ... Closing (channel.close)`) at each shutdown of
//! the orchestrator and of every worker. Nor may the cancel of a dropped consumer reach the
//! broker after its channel closed: the broker then failed the connection (`CHANNEL_ERROR -
//! expected 'channel.open'`), seen once in CI; several consumers per round widen that window.

use std::sync::{Arc, Mutex};

use tasker::TestEnv;
use tasker_broker::{Broker, topology};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// Every ERROR event of the process, as `target: fields`.
#[derive(Clone, Default)]
struct Errors(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Errors {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            let mut fields = String::new();
            event.record(
                &mut |field: &tracing::field::Field, value: &dyn std::fmt::Debug| {
                    fields.push_str(&format!("{}={value:?} ", field.name()));
                },
            );
            let mut all = self.0.lock().unwrap();
            all.push(format!("{}: {fields}", event.metadata().target()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_broker_after_its_channels_were_dropped_logs_no_error() -> anyhow::Result<()> {
    // The only test of this binary: the subscriber sees lapin's own tasks on every thread.
    let errors = Errors::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(errors.clone()))?;
    let env = TestEnv::new().await?;
    let cfg = &env.config;
    let namespaces = ["rust_examples".to_owned()];
    for round in 0..20 {
        let broker = Broker::connect(&cfg.amqp_url, &cfg.queue_prefix, "close-test").await?;
        broker.declare(&namespaces).await?;
        let publisher = broker.publisher().await?;
        let queue = topology::steps_queue(&cfg.queue_prefix, "rust_examples");
        let mut subscriptions = Vec::new();
        for n in 0..8 {
            let tag = format!("close-test-{round}-{n}");
            subscriptions.push(broker.consume(&queue, &tag, 8).await?);
        }
        // As a session ends: its publisher and consumers go, then the connection closes.
        drop(publisher);
        drop(subscriptions);
        broker.close().await;
        assert!(
            !broker.is_connected(),
            "round {round}: the connection closed"
        );
    }
    let seen = errors.0.lock().unwrap().clone();
    assert!(
        seen.is_empty(),
        "errors logged by a graceful close: {seen:#?}"
    );
    env.cleanup().await
}
