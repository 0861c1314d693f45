#!/usr/bin/env bash
# Run a command with DATABASE_URL / AMQP_URL / TASKER_HOME pointing at the local services
# (or at the ones already set in the environment), e.g.
#   cargo-make/with-services-env.sh cargo test -p tasker-orchestration
# It does not start anything: run `cargo-make/services.sh start` (or `bin/dev services-start`) first.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(cargo-make/services.sh env)"
exec "$@"
