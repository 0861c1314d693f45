#!/usr/bin/env bash
# Builds the binding (build.sh), then runs the Python test suite with pytest. Needs PostgreSQL
# and RabbitMQ: uses DATABASE_URL/AMQP_URL when set, else the project's services
# (cargo-make/services.sh). The API client's tests (tests/test_client.py) also start
# target/debug/tasker-orchestrator, which `cargo build --workspace --bins` makes (cargo make test
# runs it before this). Extra arguments go to pytest. Runs from any folder.
set -euo pipefail
# Workers in these tests run against RabbitMQ alone; the ones that start an orchestrator turn
# template registration back on and point it there (tests/fast/first_workflow.rs and the conformance
# suite cover registration in every language).
export TASKER_WORKER__REGISTER_TEMPLATES=false
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# tasker.testing.WorkflowEnv starts this orchestrator in test mode (docs/testing.md).
export TASKER_ORCHESTRATOR_BIN="${TASKER_ORCHESTRATOR_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/tasker-orchestrator}"
"$here/build.sh"
if [ -z "${DATABASE_URL:-}" ] || [ -z "${AMQP_URL:-}" ]; then
    "$root/cargo-make/services.sh" start
    eval "$("$root/cargo-make/services.sh" env)"
fi
cd "$here"
set +e
"$here/.venv/bin/python" -m pytest -q "$@"
status=$?
set -e
# pytest exits 5 when it collected no test: that is a broken suite, not a passing one.
if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest found no tests" >&2
    exit 1
fi
exit "$status"
