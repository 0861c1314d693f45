#!/usr/bin/env bash
# The demo (`bin/dev demo`): local services, release build, an orchestrator and a Rust worker in
# the background, then every example workflow submitted through the `tasker` CLI.
# The orchestrator and worker keep running afterwards so you can try the CLI yourself;
# `bin/dev stop` stops them and the services.
#
# It runs as a shared cluster should (docs/auth.md): the orchestrator requires API tokens; the
# CLI uses an admin token (.tasker/demo/admin.token; `source .tasker/demo/env` to use it
# yourself); each language's worker has a token and a broker user of its own that reach only its
# namespace, and the orchestrator a broker user of its own, not `guest`
# (cargo-make/lib/identities.sh).
#
# Knobs (defaults in brackets):
#   TASKER_ORCHESTRATOR_BIND [127.0.0.1:8080]   TASKER_WORKER_HEALTH_PORT [8100]
#   TASKER_HEALTH_TIMEOUT [60] seconds to wait for /health   TASKER_DEMO_TASK_TIMEOUT [120] per workflow
#   TASKER_BIN_DIR [${CARGO_TARGET_DIR:-target}/release]   TASKER_DEMO_SKIP_BUILD=1 to use existing binaries
set -euo pipefail
# shellcheck source=cargo-make/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=cargo-make/lib/processes.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/processes.sh"
LOG_PREFIX="demo:"
LOG_TAIL_PREFIX=""

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
# The demo's own `tasker show` and `tasker workers` print on: never held in a pager on a terminal.
export TASKER_PAGER=cat

# namespace|name|context -- one line per submission; `conditional` twice to show both branches,
# then one workflow through each FFI worker.
WORKFLOWS=(
  'rust_examples|linear|{"value": 6}'
  'rust_examples|diamond|{"value": 3}'
  'rust_examples|conditional|{"value": 42}'
  'rust_examples|conditional|{"value": 7}'
  'rust_examples|complex_dag|{"value": 2}'
  'rust_examples|hierarchical_tree|{"value": 5}'
  "rust_examples|csv_products|{\"csv_path\": \"$ROOT/tests/fixtures/products.csv\", \"batch_size\": 200}"
  'ruby_examples|linear|{"value": 6}'
  'python_examples|diamond|{"value": 3}'
  'typescript_examples|conditional|{"value": 42}'
)
# The FFI workers: language and /health port.
LANGUAGES=(ruby:8200 python:8300 typescript:8400)

ORCH_BIND="${TASKER_ORCHESTRATOR_BIND:-127.0.0.1:8080}"
ORCH_URL="http://$ORCH_BIND"
WORKER_HEALTH_PORT="${TASKER_WORKER_HEALTH_PORT:-8100}"
WORKER_HEALTH_URL="http://127.0.0.1:$WORKER_HEALTH_PORT/health"
HEALTH_TIMEOUT="${TASKER_HEALTH_TIMEOUT:-60}"
TASK_TIMEOUT="${TASKER_DEMO_TASK_TIMEOUT:-120}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN_DIR="${TASKER_BIN_DIR:-$TARGET_DIR/release}"

# A half-started system is no use: stop what we started, then fail.
start_failed() {
  cargo-make/services.sh stop-procs || true
  die "$@"
}

# Everything the demo needs (cargo-make/dependencies.txt), checked with dpkg-query and installed
# now, before the long build, so that a package that cannot be installed fails the demo here, by
# name: services.sh start ensures the "services" group (minus what DATABASE_URL/AMQP_URL replace;
# idempotent, ~0.05 s when `cargo make demo` already started them), then the bindings' groups.
cargo-make/services.sh start
eval "$(cargo-make/services.sh env)"
cargo-make/ensure-deps.sh ruby python typescript
LOG_DIR="$TASKER_HOME/logs"
RUN_DIR="$TASKER_HOME/run"
mkdir -p "$LOG_DIR" "$RUN_DIR"

if [[ -z "${TASKER_DEMO_SKIP_BUILD:-}" ]]; then
  say "cargo build --release --workspace --bins (first time: a few minutes)"
  cargo build --release --workspace --bins
fi
for bin in tasker-orchestrator tasker-worker-rust tasker; do
  [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin is missing: did the build produce it?"
done

# A previous demo's processes would hold the ports (and run old binaries): replace them.
cargo-make/services.sh stop-procs

# Identities: the admin token the CLI uses, and each worker's token and broker user.
# shellcheck source=cargo-make/lib/identities.sh
source "$ROOT/cargo-make/lib/identities.sh"
make_identities "$TASKER_HOME/demo" || die "could not create the demo's tokens and broker users"
TASKER_TOKEN="$(cat "$TASKER_HOME/demo/admin.token")"
export TASKER_TOKEN

port_of() { echo "${1##*:}"; }
for port in "$(port_of "$ORCH_BIND")" "$WORKER_HEALTH_PORT" "${LANGUAGES[@]#*:}"; do
  if port_open "$port"; then
    die "port $port is in use by another process; stop it or set TASKER_ORCHESTRATOR_BIND / TASKER_WORKER_HEALTH_PORT"
  fi
done

# start_process NAME COMMAND...: in the background (start_bg: its own session, so a Ctrl-C during
# the submissions below doesn't take the servers down, and they outlive this script), with
# run/NAME.pid and logs/NAME.log.
start_process() {
  local name="$1"
  shift
  start_bg "$name" "$RUN_DIR/$name.pid" "$LOG_DIR/$name.log" "$@"
}

# wait_process NAME URL: its /health answers (wait_healthy), or everything stops.
wait_process() {
  wait_healthy "$1" "$2" "$RUN_DIR/$1.pid" "$LOG_DIR/$1.log" || start_failed "$1 $UNHEALTHY"
}

say "starting orchestrator and Rust worker"
t0=$SECONDS
# The orchestrator starts with no templates: each worker registers its own when it starts.
export TASKER_WORKER__ORCHESTRATOR_URL="$ORCH_URL"
mapfile -t identity < <(orchestrator_env)
start_process orchestrator env "${identity[@]}" "$BIN_DIR/tasker-orchestrator" --bind "$ORCH_BIND"
wait_process orchestrator "$ORCH_URL/health"
mapfile -t identity < <(worker_env rust)
start_process worker-rust env "${identity[@]}" "$BIN_DIR/tasker-worker-rust" \
  --templates tests/fixtures/task_templates/rust --health-port "$WORKER_HEALTH_PORT"
wait_process worker-rust "$WORKER_HEALTH_URL"
echo "both ready in $((SECONDS - t0))s"

# One worker per FFI language: its build.sh installs what the language needs and builds the
# binding (release); its conformance-worker runs the language's example handlers.
for entry in "${LANGUAGES[@]}"; do
  lang="${entry%%:*}"
  port="${entry#*:}"
  say "building and starting the $lang worker"
  if ! "workers/$lang/build.sh" >"$LOG_DIR/build-$lang.log" 2>&1; then
    show_log_tail "$LOG_DIR/build-$lang.log"
    start_failed "building the $lang binding failed"
  fi
  mapfile -t identity < <(worker_env "$lang")
  start_process "worker-$lang" env "${identity[@]}" "workers/$lang/conformance-worker" \
    --templates "tests/fixtures/task_templates/$lang" --health-port "$port"
  wait_process "worker-$lang" "http://127.0.0.1:$port/health"
done

names=() results=() times=()
failures=0
for entry in "${WORKFLOWS[@]}"; do
  IFS='|' read -r namespace name context <<<"$entry"
  say "tasker submit $namespace $name --context '$context' --wait"
  started="$(now_ms)"
  rc=0
  # timeout: a task that never finishes must not hang the demo.
  timeout "$TASK_TIMEOUT" "$BIN_DIR/tasker" --url "$ORCH_URL" submit "$namespace" "$name" \
    --version 1.0.0 --context "$context" --wait || rc=$?
  elapsed=$(($(now_ms) - started))
  names+=("$namespace/$name")
  times+=("$elapsed ms")
  if ((rc == 0)); then
    results+=("complete")
  else
    failures=$((failures + 1))
    if ((rc == 124)); then results+=("TIMED OUT after ${TASK_TIMEOUT}s"); else results+=("FAILED (exit $rc)"); fi
  fi
done

say "summary"
printf '%-34s %-24s %s\n' WORKFLOW RESULT "WALL TIME (CLI)"
for i in "${!names[@]}"; do
  printf '%-34s %-24s %s\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
done

# One task that fails on purpose, left in error for the user to repair: `flaky` fails its two
# attempts; a retry gives it two more, and it succeeds on its third.
say "a task that fails, to repair by hand"
repair_id="$("$BIN_DIR/tasker" --url "$ORCH_URL" --json submit rust_examples repairable --version 1.0.0 \
  --context '{"value": 6, "succeed_on_attempt": 3}' | sed -n 's/^  "id": "\([0-9a-f-]*\)",$/\1/p')"
repair_state="$("$BIN_DIR/tasker" --url "$ORCH_URL" wait "$repair_id" --timeout "$TASK_TIMEOUT" | sed -n 's/^state    //p' || true)"
echo "task $repair_id is ${repair_state:-unknown} (on purpose)"

# Time: a schedule that starts the linear workflow every minute, and a task waiting for a signal.
say "a schedule, and a task waiting for a signal"
"$BIN_DIR/tasker" --url "$ORCH_URL" schedules apply tests/fixtures/schedules/linear_every_minute.yaml
# Applying a definition never resumes a paused schedule; an earlier demo's schedule was paused by
# the orchestrator once this run's identities replaced the token that saved it. Resumed with this
# run's token, it fires every minute as said below.
"$BIN_DIR/tasker" --url "$ORCH_URL" schedules resume rust_examples/linear_every_minute >/dev/null
signal_id="$("$BIN_DIR/tasker" --url "$ORCH_URL" --json submit python_examples signal_wait \
  --context '{"value": 21}' | sed -n 's/^  "id": "\([0-9a-f-]*\)",$/\1/p')"
"$BIN_DIR/tasker" --url "$ORCH_URL" show "$signal_id"
say "tasker signal $signal_id approved --payload '{\"approved_by\": \"the demo\"}'"
"$BIN_DIR/tasker" --url "$ORCH_URL" signal "$signal_id" approved --payload '{"approved_by": "the demo"}'
"$BIN_DIR/tasker" --url "$ORCH_URL" wait "$signal_id" --timeout "$TASK_TIMEOUT" || failures=$((failures + 1))

# Composition: a workflow that starts a child, which starts its own (docs/composition.md); the
# workers registry; and the polyglot pipeline, one task per batch of 1,000 events through
# TypeScript -> Rust -> Python -> Ruby -> TypeScript, checked against the one-process oracle.
say "child workflows, the workers, and one workflow across four languages"
"$BIN_DIR/tasker" --url "$ORCH_URL" templates register \
  tests/fixtures/task_templates/composition tests/fixtures/task_templates/polyglot
"$BIN_DIR/tasker" --url "$ORCH_URL" workers
family_id="$("$BIN_DIR/tasker" --url "$ORCH_URL" --json submit rust_examples family \
  --context '{"value": 1, "sleep_ms": 0}' | sed -n 's/^  "id": "\([0-9a-f-]*\)",$/\1/p')"
"$BIN_DIR/tasker" --url "$ORCH_URL" wait "$family_id" --timeout "$TASK_TIMEOUT" || failures=$((failures + 1))
pipeline_ids=()
for first in 0 1000 2000 3000 4000 5000 6000 7000 8000 9000; do
  pipeline_ids+=("$("$BIN_DIR/tasker" --url "$ORCH_URL" --json submit polyglot pipeline \
    --context "{\"seed\": 42, \"users\": 10000, \"first\": $first, \"count\": 1000}" |
    sed -n 's/^  "id": "\([0-9a-f-]*\)",$/\1/p')")
done
sinks="$RUN_DIR/pipeline-sinks.json"
{
  echo "["
  sep=""
  for id in "${pipeline_ids[@]}"; do
    "$BIN_DIR/tasker" --url "$ORCH_URL" wait "$id" --timeout "$TASK_TIMEOUT" >/dev/null || failures=$((failures + 1))
    printf '%s' "$sep"
    "$BIN_DIR/tasker" --url "$ORCH_URL" --json show "$id" |
      python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["task"]["result"]["sink"]))'
    sep=","
  done
  echo "]"
} >"$sinks"
if python3 benches/pipeline_oracle.py --events 10000 --seed 42 --users 10000 --check "$sinks"; then
  echo "polyglot pipeline: 10,000 events in 10 tasks, aggregates equal to the oracle's"
else
  failures=$((failures + 1))
fi

cat <<EOF

Still running, so you can look around. The API requires a token: the demo made an admin one,
  in $TASKER_HOME/demo/admin.token (paste it when the dashboard asks; the CLI reads TASKER_TOKEN):
        source $TASKER_HOME/demo/env
  dashboard     $ORCH_URL/ui/   (tasks, their DAG and timings live, templates, schedules, dead letters)
  orchestrator  $ORCH_URL   (health $ORCH_URL/health, log $LOG_DIR/orchestrator.log)
  rust worker   $WORKER_HEALTH_URL   (log $LOG_DIR/worker-rust.log)
  ruby, python, typescript workers   http://127.0.0.1:8200/health, :8300, :8400   (logs $LOG_DIR/worker-<lang>.log)
  e.g.  $BIN_DIR/tasker --url $ORCH_URL list
        $BIN_DIR/tasker --url $ORCH_URL workers
        $BIN_DIR/tasker --url $ORCH_URL show $family_id   (a parent with its child; the child has its own)
        $BIN_DIR/tasker --url $ORCH_URL submit rust_examples linear --version 1.0.0 --context '{"value": 1}' --wait
        $BIN_DIR/tasker --url $ORCH_URL submit python_examples linear --context '{"value": 1}' --wait

  Task $repair_id failed on purpose; see why and repair it in the dashboard,
        $ORCH_URL/ui/#/tasks/$repair_id   (the Retry button)
  or with the CLI, and read its history:
        $BIN_DIR/tasker --url $ORCH_URL show $repair_id
        $BIN_DIR/tasker --url $ORCH_URL retry $repair_id --reason "fixed upstream" --wait
        $BIN_DIR/tasker --url $ORCH_URL history $repair_id

  A step that waits for a signal (python_examples/signal_wait; it gives up after 30 s):
        id=\$($BIN_DIR/tasker --url $ORCH_URL --json submit python_examples signal_wait --context '{"value": 2}' | sed -n 's/^  "id": "\(.*\)",\$/\1/p')
        $BIN_DIR/tasker --url $ORCH_URL show \$id
        $BIN_DIR/tasker --url $ORCH_URL signal \$id approved --payload '{"approved_by": "you"}'
  The schedule rust_examples/linear_every_minute starts a task every minute (the Schedules page):
        $BIN_DIR/tasker --url $ORCH_URL schedules show rust_examples/linear_every_minute
        $BIN_DIR/tasker --url $ORCH_URL schedules pause rust_examples/linear_every_minute --note "enough"

Stop everything with: bin/dev stop
EOF

if ((failures > 0)); then
  echo "demo: $failures of ${#names[@]} workflows did not complete" >&2
  exit 1
fi
