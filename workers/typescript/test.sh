#!/usr/bin/env bash
# Builds the TypeScript worker, then runs its tests (node --test) against the running services
# (cargo-make/services.sh) and a debug orchestrator. Exits non-zero on any failure.
set -euo pipefail
# Workers in these tests run against RabbitMQ alone; the ones that start an orchestrator turn
# template registration back on and point it there (tests/fast/first_workflow.rs and the conformance
# suite cover registration in every language).
export TASKER_WORKER__REGISTER_TEMPLATES=false
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# tasker-workflows/testing's WorkflowEnv starts this orchestrator in test mode (docs/testing.md).
export TASKER_ORCHESTRATOR_BIN="${TASKER_ORCHESTRATOR_BIN:-$CARGO_TARGET_DIR/debug/tasker-orchestrator}"

"$here/build.sh"
# The end-to-end test starts target/debug/tasker-orchestrator (cargo-make/test.sh builds it later
# anyway; the build cache is shared).
(cd "$root" && cargo build --quiet -p tasker-orchestration --bin tasker-orchestrator)
if [[ -z "${DATABASE_URL:-}" || -z "${AMQP_URL:-}" ]]; then
  "$root/cargo-make/services.sh" start >&2
  eval "$("$root/cargo-make/services.sh" env)"
fi
cd "$here"
node --test test/*.test.js
