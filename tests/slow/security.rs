//! The security suite: each attack of docs/auth.md's threat list, tried as an attacker would
//! against a real orchestrator, RabbitMQ and PostgreSQL, asserting that it is refused (a JSON
//! error naming the bound or the rule) or changes nothing, and that a healthy task beside it
//! still completes. One module per family of attacks.

#[path = "security/alerts.rs"]
mod alerts;
#[path = "security/audit.rs"]
mod audit;
#[path = "security/bounds.rs"]
mod bounds;
#[path = "security/common.rs"]
mod common;
#[path = "security/events.rs"]
mod events;
#[path = "security/keys.rs"]
mod keys;
#[path = "security/letter_operations.rs"]
mod letter_operations;
#[path = "security/lookup.rs"]
mod lookup;
#[path = "security/operations.rs"]
mod operations;
#[path = "security/reach.rs"]
mod reach;
#[path = "security/results.rs"]
mod results;
#[path = "security/running.rs"]
mod running;
#[path = "security/start_controls.rs"]
mod start_controls;
#[path = "security/step_streams.rs"]
mod step_streams;
#[path = "security/stream_children.rs"]
mod stream_children;
#[path = "security/streams.rs"]
mod streams;
#[path = "security/tokens.rs"]
mod tokens;
#[path = "security/webhooks.rs"]
mod webhooks;
