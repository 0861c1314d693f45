#!/usr/bin/env bash
# Throughput benchmark (benches/throughput.rs) against the local services, with everything it
# compares: the release binaries of the orchestrator and the Rust worker, the Python, Ruby and
# TypeScript bindings (the FFI workers; the polyglot pipeline runs on all four), and a throwaway
# venv with Celery for the peer. Extra arguments go to
# `cargo bench`. Figures: target/throughput/summary.json; `cargo make bench-report` writes
# docs/benchmarks/throughput.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
eval "$(cargo-make/services.sh env)"
cargo build --release --workspace --bins
for language in python ruby typescript; do
  workers/$language/build.sh
done
TASKER_CELERY_PYTHON="$(benches/peers/setup_celery_venv.sh "$CARGO_TARGET_DIR/celery-venv" | tail -n1)"
export TASKER_CELERY_PYTHON
exec cargo bench --bench throughput "$@"
