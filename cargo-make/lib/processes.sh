# shellcheck shell=bash
# Tasker's own processes (orchestrators, workers) that the demo and cluster mode start in the
# background, each with a pid file in the state folder's run/: starting them, waiting for their
# /health, and telling whether a pid file still names a live one. Needs common.sh; the functions
# about run/ need RUN_DIR, wait_healthy needs HEALTH_TIMEOUT (seconds).

# Alive = exists and is not a zombie. On machines whose PID 1 reaps orphans lazily (containers,
# micro-VMs) a killed daemon lingers as a zombie, and `kill -0` alone would call it alive.
pid_alive() {
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null || return 1
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"   # the fields after "(comm) "; the first is the state
  [[ "${stat:0:1}" != Z ]]
}

# The pid in a pid file, only if that process started before the file was written: a pid reused
# by an unrelated, newer process must never be signalled.
pid_file_process() {
  local file="$1" pid etimes started_at written_at
  [[ -e "$file" ]] || return 1
  pid="$(tr -dc '0-9' <"$file")"
  pid_alive "$pid" || return 1
  etimes="$(ps -o etimes= -p "$pid" 2>/dev/null | tr -d ' ')" || return 1
  [[ -n "$etimes" ]] || return 1
  started_at=$(($(date +%s) - etimes))
  written_at="$(stat -c %Y "$file")"
  ((started_at <= written_at + 2)) || return 1
  echo "$pid"
}

# terminate PID WHAT: TERM, then KILL after a bounded wait.
terminate() {
  local pid="$1" what="$2" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do   # up to 10 s
    pid_alive "$pid" || return 0
    sleep 0.1
  done
  log "$what (pid $pid) ignored TERM for 10 s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pid_alive "$pid" || return 0
    sleep 0.1
  done
  log "WARNING: $what (pid $pid) still alive after KILL"
}

# Every process with a pid file in run/ (the demo's and the cluster's alike).
stop_tasker_processes() {
  local file pid name
  for file in "$RUN_DIR"/*.pid; do
    [[ -e "$file" ]] || continue
    name="$(basename "$file" .pid)"
    if pid="$(pid_file_process "$file")"; then
      log "stopping $name (pid $pid)"
      terminate "$pid" "$name"
    else
      log "removing stale pid file $file"
    fi
    rm -f "$file"
  done
}

status_tasker_processes() {
  local file pid name
  for file in "$RUN_DIR"/*.pid; do
    [[ -e "$file" ]] || continue
    name="$(basename "$file" .pid)"
    if pid="$(pid_file_process "$file")"; then
      printf '%-10s up    pid %s\n' "$name:" "$pid"
    else
      printf '%-10s down  (stale pid file %s)\n' "$name:" "$file"
    fi
  done
}

# start_bg LABEL PID_FILE LOG_FILE COMMAND...: COMMAND in the background, its pid in PID_FILE and
# its output in LOG_FILE (never in cargo-make's pipes). setsid: its own session and process
# group, so a Ctrl-C in the script that started it doesn't take it down, it outlives that script,
# and it can be stopped as a group. A caller holding a lock starts it with `{LOCK_FD}>&-`.
start_bg() {
  local label="$1" pid_file="$2" log_file="$3"
  shift 3
  setsid "$@" >"$log_file" 2>&1 </dev/null &
  echo "$!" >"$pid_file"
  echo "started $label (pid $!, log $log_file)"
}

# wait_healthy LABEL URL PID_FILE LOG_FILE: poll URL every 0.2 s until it answers 2xx, bounded by
# HEALTH_TIMEOUT, and check between polls that the process is still alive, so that a crash at
# start-up fails at once, with its log. (curl's own --retry-connrefused/--retry-delay backs off in
# whole seconds, 1 s, 2 s, 4 s..., and cannot notice that the process died, which made a crash
# take ~10 s to report.) On failure it shows the log's tail, leaves the reason in UNHEALTHY
# ("exited during start-up", "not healthy at URL after Ns") and returns 1: stopping what was
# started is the caller's to do.
UNHEALTHY=""
# shellcheck disable=SC2034 # UNHEALTHY is the caller's to read
wait_healthy() {
  local label="$1" url="$2" pid_file="$3" log_file="$4" pid deadline=$((SECONDS + HEALTH_TIMEOUT))
  pid="$(tr -dc '0-9' <"$pid_file")"
  until curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; do
    if ! pid_alive "$pid"; then
      show_log_tail "$log_file"
      UNHEALTHY="exited during start-up"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      show_log_tail "$log_file"
      UNHEALTHY="not healthy at $url after ${HEALTH_TIMEOUT}s"
      return 1
    fi
    sleep 0.2
  done
  echo "$label healthy ($url)"
}
