#!/usr/bin/env bash
# Cluster mode: several orchestrators and workers of every language on one machine, against the
# local PostgreSQL + RabbitMQ (cargo-make/services.sh).
#
#   cargo-make/cluster.sh start           services, release build, then every instance below
#   cargo-make/cluster.sh status          a table of the instances (+ worker counters) and services
#   cargo-make/cluster.sh stop-instances  stop the cluster's processes only; services stay up
#   cargo-make/cluster.sh stop            stop the cluster's processes, then the services
#
#   instance                 port  command
#   orchestrator             8080  target/release/tasker-orchestrator --bind 127.0.0.1:PORT
#                            8081    --templates tests/fixtures/task_templates
#   rust workers             8100  target/release/tasker-worker-rust --health-port PORT
#                            8101    --templates tests/fixtures/task_templates/rust
#   ruby workers             8200  workers/<lang>/conformance-worker --health-port PORT
#   python workers           8300    --templates tests/fixtures/task_templates/<lang>
#   typescript workers       8400  (and PORT+1 for the second of each)
#
# The orchestrators require API tokens: an admin one for you and the CLI is in
# .tasker/cluster/admin.token (`source .tasker/cluster/env`), each language's workers run with
# a token and a broker user of their own that reach only their namespace, and the orchestrators
# with a broker user of their own, not `guest` (cargo-make/lib/identities.sh).
#
# A language's workers are skipped, with a warning, when its binding is not there
# (workers/<lang>/conformance-worker missing) or when workers/<lang>/build.sh fails; the
# orchestrators and Rust workers always start. Each instance runs in its own session with a pid
# file .tasker/run/cluster-<name>-<port>.pid and a log .tasker/logs/cluster/<name>-<port>.log.
#
# Knobs (defaults in brackets):
#   TASKER_HEALTH_TIMEOUT [60] seconds to wait for each /health
#   TASKER_CLUSTER_BUILD_TIMEOUT [900] seconds for each workers/<lang>/build.sh
#   TASKER_CLUSTER_LANGUAGES ["ruby python typescript"] language workers to try
#   TASKER_CLUSTER_SKIP_BUILD=1 use the existing release binaries (no cargo build; the
#                               bindings' build.sh still run: they are idempotent)
#   TASKER_BIN_DIR [${CARGO_TARGET_DIR:-target}/release]
set -euo pipefail
# shellcheck source=cargo-make/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=cargo-make/lib/processes.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/processes.sh"
LOG_PREFIX="[cluster]"
LOG_TAIL_PREFIX=""

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

HEALTH_TIMEOUT="${TASKER_HEALTH_TIMEOUT:-60}"
BUILD_TIMEOUT="${TASKER_CLUSTER_BUILD_TIMEOUT:-900}"
read -ra LANGUAGES <<<"${TASKER_CLUSTER_LANGUAGES:-ruby python typescript}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN_DIR="${TASKER_BIN_DIR:-$TARGET_DIR/release}"
TEMPLATES="$ROOT/tests/fixtures/task_templates"

ORCH_PORTS=(8080 8081)
# First health port of each worker language; the second instance uses +1.
declare -A WORKER_BASE_PORT=([rust]=8100 [ruby]=8200 [python]=8300 [typescript]=8400)
ALL_LANGUAGES=(rust ruby python typescript)

STATE="${TASKER_HOME:-$ROOT/.tasker}"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
RUN_DIR="$STATE/run"
LOG_DIR="$STATE/logs/cluster"
mkdir -p "$RUN_DIR" "$LOG_DIR"

# Is any non-zombie process left in process group $1? (Each instance leads its own session, so
# its group also holds whatever a wrapper script spawned without exec.)
group_alive() {
  local pid
  for pid in $(pgrep -g "$1" 2>/dev/null || true); do
    pid_alive "$pid" && return 0
  done
  return 1
}

# The process group to signal for an instance: its own group if it leads one (setsid), else
# nothing but the pid itself.
signal_instance() {
  local sig="$1" pid="$2" pgid
  pgid="$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" || true
  if [[ "$pgid" == "$pid" ]]; then
    kill "-$sig" -- "-$pid" 2>/dev/null || true
  else
    kill "-$sig" "$pid" 2>/dev/null || true
  fi
}

instance_gone() {
  local pid="$1"
  if pid_alive "$pid"; then return 1; fi
  # The leader is gone; its group (pgid == its pid) may still hold children.
  ! group_alive "$pid"
}

# --------------------------------------------------------------------------------------------
# The instances: "name port" for every one that cluster mode knows about
# --------------------------------------------------------------------------------------------
instances() {
  local port lang
  for port in "${ORCH_PORTS[@]}"; do echo "orchestrator $port"; done
  for lang in "${ALL_LANGUAGES[@]}"; do
    echo "worker-$lang ${WORKER_BASE_PORT[$lang]}"
    echo "worker-$lang $((WORKER_BASE_PORT[$lang] + 1))"
  done
}

pid_file_of() { echo "$RUN_DIR/cluster-$1-$2.pid"; }
log_file_of() { echo "$LOG_DIR/$1-$2.log"; }
health_url_of() { echo "http://127.0.0.1:$2/health"; }

# --------------------------------------------------------------------------------------------
# stop-instances
# --------------------------------------------------------------------------------------------
take_cluster_lock() {
  take_lock "$RUN_DIR/cluster.lock" 120 "another cluster.sh start/stop has held $RUN_DIR/cluster.lock for 2 minutes"
}

# TERM every cluster instance (their whole process groups) at once, wait up to 10 s for all, then
# KILL what is left. Only pid files named cluster-*.pid: the demo's processes are left alone.
stop_instances() {
  local file pid name pids=() names=() i
  for file in "$RUN_DIR"/cluster-*.pid; do
    [[ -e "$file" ]] || continue
    name="$(basename "$file" .pid)"
    if pid="$(pid_file_process "$file")"; then
      log "stopping $name (pid $pid)"
      signal_instance TERM "$pid"
      pids+=("$pid")
      names+=("$name")
    else
      log "removing stale pid file $file"
      rm -f "$file"
    fi
  done
  ((${#pids[@]} > 0)) || { log "no cluster instances running"; return 0; }
  local deadline=$((SECONDS + 10)) left
  while :; do
    left=0
    for pid in "${pids[@]}"; do instance_gone "$pid" || left=$((left + 1)); done
    ((left > 0 && SECONDS < deadline)) || break
    sleep 0.1
  done
  for i in "${!pids[@]}"; do
    if ! instance_gone "${pids[$i]}"; then
      warn "${names[$i]} (pid ${pids[$i]}) ignored TERM for 10 s; killing it"
      signal_instance KILL "${pids[$i]}"
    fi
  done
  deadline=$((SECONDS + 5))
  for i in "${!pids[@]}"; do
    until instance_gone "${pids[$i]}" || ((SECONDS >= deadline)); do sleep 0.1; done
    instance_gone "${pids[$i]}" || warn "${names[$i]} (pid ${pids[$i]}) still alive after KILL"
    rm -f "$RUN_DIR/${names[$i]}.pid"
  done
  log "stopped ${#pids[@]} cluster instance(s)"
}

# --------------------------------------------------------------------------------------------
# start
# --------------------------------------------------------------------------------------------

# Who listens on port $1: "name pid N" from ss, plus which of our pid files it belongs to.
port_owner() {
  local port="$1" line pid="" comm="" file
  line="$(ss -Hltnp "sport = :$port" 2>/dev/null | head -n 1 || true)"
  if [[ "$line" =~ \(\(\"([^\"]+)\",pid=([0-9]+) ]]; then
    comm="${BASH_REMATCH[1]}"
    pid="${BASH_REMATCH[2]}"
  fi
  [[ -n "$pid" ]] || { echo "an unknown process"; return 0; }
  for file in "$RUN_DIR"/*.pid; do
    [[ -e "$file" ]] || continue
    if [[ "$(tr -dc '0-9' <"$file")" == "$pid" ]]; then
      case "$(basename "$file")" in
        cluster-*) echo "$comm (pid $pid, a cluster instance: $file)" ;;
        *) echo "$comm (pid $pid, the DEMO's $(basename "$file" .pid): $file)" ;;
      esac
      return 0
    fi
  done
  echo "$comm (pid $pid)"
}

# Fail with every conflict listed, and say how to free the ports, if any port is taken.
check_ports_free() {
  local port busy=() demo=""
  for port in "$@"; do
    if port_open "$port"; then
      local owner
      owner="$(port_owner "$port")"
      busy+=("port $port is in use by $owner")
      [[ "$owner" != *DEMO* ]] || demo=1
    fi
  done
  ((${#busy[@]} > 0)) || return 0
  for port in "${busy[@]}"; do log "$port"; done
  if [[ -n "$demo" ]]; then
    die "the demo (bin/dev demo) is running on the cluster's ports; stop its orchestrator and worker with
    cargo-make/services.sh stop-procs    (PostgreSQL and RabbitMQ stay up)
  and run the cluster again"
  fi
  die "the cluster's ports are taken (see above); stop those processes and try again"
}

# Build and check a language binding; prints nothing and returns 1 (after a warning) if its
# workers must be skipped.
prepare_language() {
  local lang="$1" dir="workers/$1" build_log="$LOG_DIR/build-$1.log"
  if [[ ! -d "$dir" ]]; then
    warn "skipping the $lang workers: $dir/ does not exist (the $lang binding is not on this branch)"
    return 1
  fi
  if [[ -e "$dir/build.sh" ]]; then
    log "$lang: running $dir/build.sh (log $build_log, limit ${BUILD_TIMEOUT}s)"
    local rc=0 t0=$SECONDS
    timeout "$BUILD_TIMEOUT" bash "$dir/build.sh" >"$build_log" 2>&1 </dev/null {LOCK_FD}>&- || rc=$?
    if ((rc != 0)); then
      show_log_tail "$build_log"
      if ((rc == 124)); then
        warn "skipping the $lang workers: $dir/build.sh did not finish within ${BUILD_TIMEOUT}s (log $build_log)"
      else
        warn "skipping the $lang workers: $dir/build.sh failed with exit $rc (log $build_log)"
      fi
      return 1
    fi
    log "$lang: built in $((SECONDS - t0))s"
  fi
  if [[ ! -e "$dir/conformance-worker" ]]; then
    warn "skipping the $lang workers: $dir/conformance-worker does not exist"
    return 1
  fi
  if [[ ! -x "$dir/conformance-worker" ]]; then
    warn "skipping the $lang workers: $dir/conformance-worker is not executable"
    return 1
  fi
}

STARTED=()   # "name port" of every instance launched by this run

# start_instance NAME PORT COMMAND...: in the background (start_bg), without the cluster lock.
# The log is named relative to the repository, where this script runs, when it lies inside it.
start_instance() {
  local name="$1" port="$2" log_file
  shift 2
  log_file="$(log_file_of "$name" "$port")"
  start_bg "$name-$port" "$(pid_file_of "$name" "$port")" "${log_file#"$ROOT"/}" "$@" {LOCK_FD}>&-
  STARTED+=("$name $port")
}

cluster_start_failed() {
  log "$*"
  log "stopping the instances this run started"
  stop_instances || true
  die "cluster start failed: $*"
}

# wait_instance NAME PORT: its /health answers (wait_healthy), or the whole start fails.
wait_instance() {
  local name="$1" port="$2" log_file
  log_file="$(log_file_of "$name" "$port")"
  wait_healthy "$name-$port" "$(health_url_of "$name" "$port")" "$(pid_file_of "$name" "$port")" "$log_file" \
    || cluster_start_failed "$name-$port $UNHEALTHY (log $log_file)"
}

cluster_start() {
  local t0=$SECONDS port lang
  take_cluster_lock

  # Replace a previous cluster (its ports, its old binaries), like the demo does.
  if compgen -G "$RUN_DIR/cluster-*.pid" >/dev/null; then
    say "stopping the previous cluster's instances"
    stop_instances
  fi
  # Fail fast, before any build, if the demo or anything else holds the core ports.
  check_ports_free "${ORCH_PORTS[@]}" "${WORKER_BASE_PORT[rust]}" $((WORKER_BASE_PORT[rust] + 1))

  say "starting PostgreSQL and RabbitMQ"
  cargo-make/services.sh start {LOCK_FD}>&-
  eval "$(cargo-make/services.sh env)"

  if [[ -z "${TASKER_CLUSTER_SKIP_BUILD:-}" ]]; then
    say "cargo build --release --workspace --bins"
    cargo build --release --workspace --bins {LOCK_FD}>&-
  fi
  local bin
  for bin in tasker-orchestrator tasker-worker-rust tasker; do
    [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin is missing: did the build produce it?"
  done

  say "language bindings"
  local langs=() skipped=()
  for lang in "${LANGUAGES[@]}"; do
    [[ -n "${WORKER_BASE_PORT[$lang]:-}" && "$lang" != rust ]] || die "unknown language '$lang' in TASKER_CLUSTER_LANGUAGES (ruby, python, typescript)"
    if prepare_language "$lang"; then langs+=("$lang"); else skipped+=("$lang"); fi
  done

  local ports=("${ORCH_PORTS[@]}")
  for lang in rust "${langs[@]}"; do
    ports+=("${WORKER_BASE_PORT[$lang]}" $((WORKER_BASE_PORT[$lang] + 1)))
  done
  check_ports_free "${ports[@]}"

  say "tokens and broker users"
  ORCH_URL="http://127.0.0.1:${ORCH_PORTS[0]}"
  # shellcheck source=cargo-make/lib/identities.sh
  source "$ROOT/cargo-make/lib/identities.sh"
  make_identities "$STATE/cluster" {LOCK_FD}>&- || die "could not create the cluster's tokens and broker users"

  say "starting the instances"
  STARTED=()
  # Workers register their templates with the first orchestrator when they start.
  export TASKER_WORKER__ORCHESTRATOR_URL="$ORCH_URL"
  local identity
  mapfile -t identity < <(orchestrator_env)
  for port in "${ORCH_PORTS[@]}"; do
    start_instance orchestrator "$port" env "${identity[@]}" \
      "$BIN_DIR/tasker-orchestrator" --bind "127.0.0.1:$port" --templates "$TEMPLATES"
  done
  for lang in rust "${langs[@]}"; do
    mapfile -t identity < <(worker_env "$lang")
    for port in "${WORKER_BASE_PORT[$lang]}" $((WORKER_BASE_PORT[$lang] + 1)); do
      if [[ "$lang" == rust ]]; then
        start_instance worker-rust "$port" env "${identity[@]}" \
          "$BIN_DIR/tasker-worker-rust" --templates "$TEMPLATES/rust" --health-port "$port"
      else
        start_instance "worker-$lang" "$port" env "${identity[@]}" \
          "workers/$lang/conformance-worker" --templates "$TEMPLATES/$lang" --health-port "$port"
      fi
    done
  done
  local entry
  for entry in "${STARTED[@]}"; do
    # shellcheck disable=SC2086 # "name port"
    wait_instance $entry
  done
  echo "${#STARTED[@]} instances healthy in $((SECONDS - t0))s"

  echo
  cluster_status || true
  if ((${#skipped[@]} > 0)); then
    echo
    warn "started without the ${skipped[*]} workers (see the warnings above)"
  fi
  cat <<EOF

Submit to either orchestrator with the admin token (source $STATE/cluster/env), e.g.
  source $STATE/cluster/env
  $BIN_DIR/tasker --url http://127.0.0.1:8081 submit rust_examples linear --context '{"value": 6}' --wait
Status: cargo make cluster-status   Stop: cargo make cluster-stop-instances (services stay up)
                                          cargo make cluster-stop (also PostgreSQL and RabbitMQ)
EOF
}

# --------------------------------------------------------------------------------------------
# status
# --------------------------------------------------------------------------------------------

# "received succeeded failed" from a worker's /health JSON (200 or 503), or nothing.
worker_counters() {
  local body r s f
  body="$(curl -sS --max-time 2 "$1" 2>/dev/null)" || return 1
  [[ "$body" =~ \"received\":([0-9]+) ]] && r="${BASH_REMATCH[1]}" || return 1
  [[ "$body" =~ \"succeeded\":([0-9]+) ]] && s="${BASH_REMATCH[1]}" || return 1
  [[ "$body" =~ \"failed\":([0-9]+) ]] && f="${BASH_REMATCH[1]}" || return 1
  echo "$r $s $f"
}

cluster_status() {
  local rc=0 running=0 name port pid_file pid state code url counters lang
  local fmt='%-22s %-5s %-8s %-34s %9s %10s %7s\n'
  # shellcheck disable=SC2059 # the format is ours
  printf "$fmt" INSTANCE PORT PID STATE RECEIVED SUCCEEDED FAILED
  while read -r name port; do
    pid_file="$(pid_file_of "$name" "$port")"
    url="$(health_url_of "$name" "$port")"
    counters="- - -"
    pid="-"
    if pid="$(pid_file_process "$pid_file")"; then
      running=$((running + 1))
      code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null || true)"
      case "$code" in
        2??) state="up" ;;
        000) state="DOWN (running, /health unreachable)"; rc=1 ;;
        *) state="DOWN (running, /health $code)"; rc=1 ;;
      esac
      if [[ "$name" == worker-* ]]; then counters="$(worker_counters "$url" || echo "? ? ?")"; fi
    else
      pid="-"
      lang="${name#worker-}"
      if [[ -e "$pid_file" ]]; then
        state="DOWN (exited; see its log)"
        rc=1
      elif [[ "$name" == worker-* && "$lang" != rust && ! -x "workers/$lang/conformance-worker" ]]; then
        state="down (no $lang binding)"
      else
        state="down"
      fi
    fi
    local r s f
    read -r r s f <<<"$counters"
    # shellcheck disable=SC2059
    printf "$fmt" "$name" "$port" "$pid" "$state" "$r" "$s" "$f"
  done < <(instances)
  ((running > 0)) || { echo "(the cluster is not running: cargo make cluster-start-all)"; rc=1; }
  echo "logs: ${LOG_DIR#"$ROOT"/}/   pid files: ${RUN_DIR#"$ROOT"/}/cluster-*.pid"
  echo
  echo "services:"
  local out svc_rc=0
  out="$(cargo-make/services.sh status 2>&1)" || svc_rc=$?
  # services.sh also lists every pid file; the cluster's are in the table above.
  grep -v '^cluster-' <<<"$out" | sed 's/^/  /' || true
  ((svc_rc == 0)) || rc=1
  return "$rc"
}

# --------------------------------------------------------------------------------------------

case "${1:-}" in
  start) cluster_start ;;
  status) cluster_status ;;
  stop-instances) take_cluster_lock && stop_instances ;;
  stop)
    take_cluster_lock
    stop_instances
    # Then every other Tasker process with a pid file (the demo's), PostgreSQL and RabbitMQ.
    cargo-make/services.sh stop {LOCK_FD}>&-
    ;;
  *)
    echo "usage: $0 start|status|stop|stop-instances" >&2
    exit 2
    ;;
esac
