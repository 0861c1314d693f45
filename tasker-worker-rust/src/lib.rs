//! Native Rust handlers for the fixture templates in `tests/fixtures/task_templates/rust/`.
//!
//! The arithmetic handlers work on one integer: a root step reads `context.value`; any other
//! step takes the sum of its parents' `value` results. Every handler returns `{"value": n}`, so
//! each pattern's final result can be computed by hand (see the comments in each template).

pub mod handlers;

pub use handlers::registry;
