#!/usr/bin/env bash
# Builds the binding (build.sh) and runs the Ruby test suite (minitest, workers/ruby/test/).
# The end-to-end tests start target/debug/tasker-orchestrator against the local PostgreSQL and
# RabbitMQ (started here if DATABASE_URL/AMQP_URL are not set). Runnable from any directory.
set -euo pipefail
# Workers in these tests run against RabbitMQ alone; the ones that start an orchestrator turn
# template registration back on and point it there (tests/fast/first_workflow.rs and the conformance
# suite cover registration in every language).
export TASKER_WORKER__REGISTER_TEMPLATES=false
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

"$here/build.sh"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# The end-to-end tests need the orchestrator binary; cargo test builds it later anyway.
cargo build --quiet --manifest-path "$root/Cargo.toml" -p tasker-orchestration --bin tasker-orchestrator
if [[ -z "${DATABASE_URL:-}" || -z "${AMQP_URL:-}" ]]; then
  "$root/cargo-make/services.sh" start
  eval "$("$root/cargo-make/services.sh" env)"
fi
export TASKER_ORCHESTRATOR_BIN="$CARGO_TARGET_DIR/debug/tasker-orchestrator"

cd "$here"
exec ruby -w -Ilib -Itest -e 'Dir.glob("test/**/*_test.rb").sort.each { |f| require File.expand_path(f) }' -- "$@"
