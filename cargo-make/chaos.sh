#!/usr/bin/env bash
# The fault suite, long form (`cargo make chaos`): builds the binaries and every language's
# binding, then runs tests/slow/chaos.rs with TASKER_CHAOS_TASKS tasks (default here 350) across two
# orchestrators and two workers per language, printing its report. The test suite runs the
# short form (84 tasks) with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo-make/services.sh start
eval "$(cargo-make/services.sh env)"
cargo-make/ensure-deps.sh ruby python typescript
cargo build --workspace --bins
for lang_build in workers/*/build.sh; do
  "$lang_build"
done
export TASKER_CHAOS_TASKS="${TASKER_CHAOS_TASKS:-350}"
exec cargo test --test chaos -- --nocapture "$@"
