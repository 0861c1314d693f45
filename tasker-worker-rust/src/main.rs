//! `tasker-worker-rust`: the native worker for the fixture templates. It reads the templates in
//! the folder it is given, consumes only their namespaces' queues, and runs this crate's Rust
//! handlers: a program of your own with Rust handlers is the same two lines
//! (`tasker_worker::run`).

fn main() -> std::process::ExitCode {
    tasker_worker::run(tasker_worker_rust::registry())
}
