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

# Build every suite once; cargo names each test binary in a JSON line (`executable`).
mapfile -t binaries < <(
  cargo test -p tasker --no-run --message-format=json "${suites[@]}" |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"] + " " + m["executable"])
'
)
((${#binaries[@]})) || die "cargo built no slow suite"

# A suite runs as cargo test would run it: from the package's folder.
run_suite() { # NAME EXECUTABLE
  printf '\n     Running tests/slow/%s.rs (%s)\n' "$1" "$2"
  "$2"
}

log="$(mktemp "${TMPDIR:-/tmp}/tasker-slow-$beside.XXXXXX")"
trap 'rm -f "$log"' EXIT
beside_pid=""
for entry in "${binaries[@]}"; do
  name="${entry%% *}" exe="${entry#* }"
  if [[ "$name" == "$beside" ]]; then
    run_suite "$name" "$exe" >"$log" 2>&1 &
    beside_pid=$!
    log "tests/slow/$name.rs runs beside the others (its output when it ends)"
  fi
done

failed=()
for entry in "${binaries[@]}"; do
  name="${entry%% *}" exe="${entry#* }"
  [[ "$name" == "$beside" ]] && continue
  run_suite "$name" "$exe" || failed+=("$name")
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
