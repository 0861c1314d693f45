#!/usr/bin/env bash
# The slow suites (tests/slow/*.rs), built once and run in two lanes at a time: the packages suite
# (pip, npm, gem, mypy and tsc over the packages: work on the CPU) beside the others in order
# (most of their time is spent waiting on the clock: schedules firing, processes killed and
# restarted, brokers dropped). The lanes' suites share nothing but the services (each test has
# its own database and queue prefix). The other lane's output is printed as it comes; the
# packages suite's when it ends. Fails if any suite fails. Run by cargo-make/test.sh;
# `cargo-make/slow.sh` alone runs them the same way (the services' env in the environment).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=cargo-make/lib/common.sh
source cargo-make/lib/common.sh
LOG_PREFIX="[slow]"

beside=packages
suites=()
for f in tests/slow/*.rs; do suites+=(--test "$(basename "$f" .rs)"); done

# shellcheck source=cargo-make/lib/tests.sh
source cargo-make/lib/tests.sh

# Build every suite once (the whole workspace's feature set: lib/tests.sh says why).
built="$(test_binaries "${suites[@]}")" || die "the slow suites do not build"
mapfile -t binaries < <(awk '$1 == "tasker" && $2 ~ /^tests\/slow\//' <<<"$built")
((${#binaries[@]})) || die "cargo built no slow suite"
suite_name() { local target; target="$(awk '{print $2}' <<<"$1")"; basename "$target"; }

log="$(mktemp "${TMPDIR:-/tmp}/tasker-slow-$beside.XXXXXX")"
trap 'rm -f "$log"' EXIT
beside_pid=""
for entry in "${binaries[@]}"; do
  name="$(suite_name "$entry")"
  if [[ "$name" == "$beside" ]]; then
    run_test_binary "$entry" >"$log" 2>&1 &
    beside_pid=$!
    log "tests/slow/$name.rs runs beside the others (its output when it ends)"
  fi
done

failed=()
for entry in "${binaries[@]}"; do
  name="$(suite_name "$entry")"
  [[ "$name" == "$beside" ]] && continue
  run_test_binary "$entry" || failed+=("$name")
done

if [[ -n "$beside_pid" ]]; then
  status=0
  wait "$beside_pid" || status=$?
  printf '\n----- tests/slow/%s.rs (ran beside the others) -----\n' "$beside"
  cat "$log"
  ((status == 0)) || failed+=("$beside")
fi

((${#failed[@]} == 0)) || die "failed: ${failed[*]}"
log "every slow suite passed"
