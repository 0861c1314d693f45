//! Tasker's RabbitMQ layer, shared by the orchestrator and the worker core.
//!
//! - [`Broker`]: one connection ([`connect`](Broker::connect): failover over a cluster's nodes),
//!   the queue topology it declares (`declare`: durable, dead-lettered, prefixed), channels.
//! - [`Subscription`]: a queue's deliveries, and the [`Stopper`] that ends them.
//! - [`Publisher`]: persistent messages with publisher confirms, a whole batch per confirm round.
//! - [`next_batch`]: take what has arrived, up to a limit, never waiting to fill.
//! - [`Supervisor`]: keep a connection alive, reconnecting with jittered exponential backoff.
//! - [`DeadLetters`]: move a message that cannot be processed to the dead letters, with the reason.
//! - [`topology`]: the names of Tasker's queues.

mod batch;
mod connect;
pub mod dead;
mod declare;
mod error;
mod publisher;
mod subscribe;
pub mod supervisor;
pub mod topology;

pub use lapin::message::Delivery;
pub use lapin::options::{BasicAckOptions, BasicNackOptions, BasicRejectOptions};
pub use lapin::types::{AMQPValue, FieldArray, FieldTable};

pub use batch::{next_batch, until_any_ends};
pub use connect::{ANSWER_TIMEOUT, Broker, redact, user_of};
pub use dead::DeadLetters;
pub use declare::DELIVERY_LIMIT;
pub use error::{Error, Result};
pub use publisher::{Outgoing, Publisher, Round};
pub use subscribe::{Stopper, Subscription};
pub use supervisor::Supervisor;
