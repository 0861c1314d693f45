# shellcheck shell=bash
# A 3-node RabbitMQ cluster on this one machine, beside the single node of rabbitmq.sh, for what
# only a cluster shows: quorum queues, a leader that dies, Tasker's list of broker nodes
# (`cargo-make/services.sh cluster-start`). Nodes tasker1@localhost..tasker3@localhost, each an
# ordinary process with its own AMQP and distribution ports and its configuration, message store,
# logs and pid file in <state>/rabbitmq-cluster/taskerN/; one HOME (the Erlang cookie the nodes
# and the CLI must share) in <state>/rabbitmq-cluster/home; and one epmd of the cluster's own, so
# that stopping the cluster can `epmd -kill` it without touching the single node's epmd or
# anybody else's. Never started by `services.sh start`: only `cluster-start` starts it, and
# `services.sh stop` stops it too.
# Needs common.sh, processes.sh and rabbitmq.sh (RMQ_BIN, find_epmd), and STATE (absolute),
# CLUSTER_AMQP_PORT, CLUSTER_DIST_PORT (node N gets base + N - 1 of each) and CLUSTER_EPMD_PORT
# set before it is sourced. Starting and stopping run under services.sh's lock (LOCK_FD).

RMQC_SIZE=3
RMQC_DIR="$STATE/rabbitmq-cluster"
RMQC_HOME="$RMQC_DIR/home"
RMQC_EPMD_LOG="$RMQC_DIR/epmd.log"

rmqc_node() { echo "tasker$1@localhost"; }
rmqc_dir() { echo "$RMQC_DIR/tasker$1"; }
rmqc_amqp_port() { echo $((CLUSTER_AMQP_PORT + $1 - 1)); }
rmqc_dist_port() { echo $((CLUSTER_DIST_PORT + $1 - 1)); }
rmqc_pid_file() { echo "$RMQC_DIR/tasker$1/rabbitmq.pid"; }
rmqc_log_dir() { echo "$RMQC_DIR/tasker$1/log"; }
rmqc_log() { echo "$RMQC_DIR/tasker$1/log/$(rmqc_node "$1").log"; }
rmqc_nodes() { seq 1 "$RMQC_SIZE"; }

# rmqc_check_n N USAGE: N is a node number, 1..RMQC_SIZE, or die with USAGE.
rmqc_check_n() {
  if [[ ! "${1:-}" =~ ^[1-9][0-9]*$ ]] || (($1 > RMQC_SIZE)); then die "$2"; fi
}

# The ports are ours only if they are numbers and none of them is one of the single node's: the
# single node's epmd above all, which `epmd -kill` in rmqc_stop must never reach.
rmqc_check_ports() {
  local p
  for p in "$CLUSTER_AMQP_PORT" "$CLUSTER_DIST_PORT" "$CLUSTER_EPMD_PORT"; do
    if [[ ! "$p" =~ ^[0-9]+$ ]] || ((p == 0 || p + RMQC_SIZE - 1 > 65535)); then
      die "bad port '$p' in TASKER_CLUSTER_AMQP_PORT / TASKER_CLUSTER_DIST_PORT / TASKER_CLUSTER_EPMD_PORT"
    fi
  done
  local ours=() n
  for n in $(rmqc_nodes); do ours+=("$(rmqc_amqp_port "$n")" "$(rmqc_dist_port "$n")"); done
  ours+=("$CLUSTER_EPMD_PORT")
  for p in "${ours[@]}"; do
    case " $AMQP_PORT $AMQPS_PORT $AMQP_DIST_PORT $EPMD_PORT $PG_PORT $PG_TLS_PORT " in
      *" $p "*) die "cluster port $p is also one of the single node's / PostgreSQL's ports; change TASKER_CLUSTER_*_PORT" ;;
    esac
  done
  (($(printf '%s\n' "${ours[@]}" | sort -u | wc -l) == ${#ours[@]})) \
    || die "the cluster's AMQP, distribution and epmd ports overlap (${ours[*]}); change TASKER_CLUSTER_*_PORT"
}

# Node N's environment, in RMQC_ENV: every variable that would otherwise point at /etc/rabbitmq,
# /var/lib/rabbitmq or /var/log, as for the single node (RMQ_ENV). The CLI tools need the same
# HOME, node name and epmd port.
RMQC_ENV=()
rmqc_env() {
  local n="$1" dir log_dir
  dir="$(rmqc_dir "$n")"
  log_dir="$(rmqc_log_dir "$n")"
  RMQC_ENV=(
    "HOME=$RMQC_HOME"
    "RABBITMQ_NODENAME=$(rmqc_node "$n")"
    "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1"
    "RABBITMQ_NODE_PORT=$(rmqc_amqp_port "$n")"
    # Explicit: RabbitMQ's default, AMQP port + 20000, overflows for 5568x.
    "RABBITMQ_DIST_PORT=$(rmqc_dist_port "$n")"
    "RABBITMQ_MNESIA_BASE=$dir/mnesia"
    "RABBITMQ_LOG_BASE=$log_dir"
    "RABBITMQ_PID_FILE=$dir/rabbitmq.pid"
    "RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins"
    "RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf"
    "RABBITMQ_ADVANCED_CONFIG_FILE=$dir/advanced.config"
    "RABBITMQ_CONF_ENV_FILE=$dir/rabbitmq-env.conf"
    "ERL_EPMD_ADDRESS=127.0.0.1"
    "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
    "ERL_EPMD_PORT=$CLUSTER_EPMD_PORT"
    "ERL_CRASH_DUMP=$log_dir/erl_crash.dump"
  )
}
rmqc() { local n="$1"; shift; rmqc_env "$n"; env "${RMQC_ENV[@]}" "$@"; }
# rmqc_ctl N ARGS: rabbitmqctl against node N, bounded (a node that hangs must not hang us).
rmqc_ctl() { local n="$1"; shift; rmqc "$n" timeout 120 "$RMQ_BIN/rabbitmqctl" -q -n "$(rmqc_node "$n")" "$@"; }

# Is PID node N's beam.smp? Its command line has the cluster's HOME and boots rabbit (a
# rabbitmqctl run for node N is a beam.smp with the same HOME and environment, but runs an
# escript), and -- since the three nodes share that HOME and RabbitMQ passes the node name in the
# environment, not on the command line -- its environment has node N's name.
rmqc_is_node_pid() {
  local pid="$1" n="$2" cmdline environ
  pid_alive "$pid" || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == beam.smp ]] || return 1
  cmdline="$( (tr '\0' ' ' <"/proc/$pid/cmdline") 2>/dev/null || true)"
  [[ "$cmdline" == *" -home $RMQC_HOME "* && "$cmdline" == *" -s rabbit boot "* ]] || return 1
  environ="$( (tr '\0' '\n' <"/proc/$pid/environ") 2>/dev/null || true)"
  grep -qxF "RABBITMQ_NODENAME=$(rmqc_node "$n")" <<<"$environ"
}

# Node N's pid: from its pid file if that still names it (a killed node leaves its file behind,
# and the pid may have been reused), else -- while it boots and has not written one yet -- the
# beam.smp that is node N (rmqc_is_node_pid).
rmqc_pid() {
  local n="$1" pid_file pid
  pid_file="$(rmqc_pid_file "$n")"
  if [[ -s "$pid_file" ]]; then
    pid="$(tr -dc '0-9' <"$pid_file")"
    if rmqc_is_node_pid "$pid" "$n"; then
      echo "$pid"
      return 0
    fi
  fi
  for pid in $(pgrep -x beam.smp || true); do
    if rmqc_is_node_pid "$pid" "$n"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}
rmqc_alive() { pid_alive "$(rmqc_pid "$1" || true)"; }
rmqc_running() { rmqc_alive "$1" && port_open "$(rmqc_amqp_port "$1")"; }
rmqc_epmd_up() {
  local epmd
  epmd="$(find_epmd || true)"
  [[ -n "$epmd" ]] && ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" "$epmd" -names >/dev/null 2>&1
}
# Anything of the cluster left: a node or its epmd.
rmqc_any_up() {
  local n
  for n in $(rmqc_nodes); do rmqc_alive "$n" && return 0; done
  rmqc_epmd_up
}

rmqc_urls() {
  local n urls=()
  for n in $(rmqc_nodes); do urls+=("amqp://guest:guest@127.0.0.1:$(rmqc_amqp_port "$n")/%2f"); done
  (IFS=,; echo "${urls[*]}")
}

# The cluster's epmd, on loopback and CLUSTER_EPMD_PORT, started before the nodes: three nodes
# booting at once would otherwise each spawn one and race for the port. `epmd -daemon` returns
# before the daemon listens, and epmd has no "wait": ask it for its names until it answers.
rmqc_epmd_start() {
  rmqc_epmd_up && return 0
  local epmd i
  epmd="$(find_epmd)" || die "epmd not found (it comes with rabbitmq-server's Erlang)"
  port_open "$CLUSTER_EPMD_PORT" \
    && die "port $CLUSTER_EPMD_PORT is in use by something that is not an epmd; set TASKER_CLUSTER_EPMD_PORT"
  if ! ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" "$epmd" -daemon \
      >"$RMQC_EPMD_LOG" 2>&1 </dev/null {LOCK_FD}>&-; then
    show_log_tail "$RMQC_EPMD_LOG"
    die "could not start the cluster's epmd on 127.0.0.1:$CLUSTER_EPMD_PORT"
  fi
  for ((i = 0; i < 50; i++)); do   # up to 5 s; it answers within a few ms
    rmqc_epmd_up && return 0
    sleep 0.1
  done
  die "the cluster's epmd does not answer on 127.0.0.1:$CLUSTER_EPMD_PORT"
}

# Start is split in two, as for the single node, so that the three nodes boot in parallel
# (~6 s each alone): rmqc_launch N returns at once, rmqc_wait N blocks until N is up. A node that
# is already up is left alone (RMQC_LAUNCHED_AT[N] stays empty).
declare -A RMQC_LAUNCHED_AT=()
rmqc_launch() {
  local n="$1" node dir log_dir pid_file amqp dist
  node="$(rmqc_node "$n")"
  dir="$(rmqc_dir "$n")"
  log_dir="$(rmqc_log_dir "$n")"
  pid_file="$(rmqc_pid_file "$n")"
  amqp="$(rmqc_amqp_port "$n")"
  dist="$(rmqc_dist_port "$n")"
  RMQC_LAUNCHED_AT[$n]=""
  if rmqc_running "$n"; then
    log "rabbitmq cluster: $node already running on 127.0.0.1:$amqp (pid $(rmqc_pid "$n"))"
    return 0
  fi
  RMQC_LAUNCHED_AT[$n]="$(now_ms)"
  local old_pid
  old_pid="$(rmqc_pid "$n" || true)"
  if pid_alive "$old_pid"; then
    # Alive but not listening. A killed node's pid file may still be there, naming the dead pid:
    # without it `rabbitmqctl wait` waits for the one this node writes.
    if [[ "$(tr -dc '0-9' <"$pid_file" 2>/dev/null)" != "$old_pid" ]]; then rm -f "$pid_file"; fi
    # Its app stopped with `cluster-ctl N stop_app` (boot state "stopped"): it would never come
    # up by itself. Otherwise a previous start still booting: rmqc_wait finishes it.
    if [[ "$(rmqc_ctl "$n" eval 'rabbit_boot_state:get().' 2>/dev/null </dev/null {LOCK_FD}>&-)" == stopped ]]; then
      log "rabbitmq cluster: $node (pid $old_pid) runs with its app stopped; start_app"
      rmqc_ctl "$n" start_app >"$log_dir/start_app.log" 2>&1 </dev/null {LOCK_FD}>&- \
        || { show_log_tail "$log_dir/start_app.log"; die "rabbitmq cluster: start_app failed for $node"; }
    else
      log "rabbitmq cluster: $node (pid $old_pid) is booting; waiting for it"
    fi
    return 0
  fi
  rm -f "$pid_file"   # a killed node's, or rabbitmqctl wait would watch the dead pid
  local p
  for p in "$amqp" "$dist"; do
    if port_open "$p"; then
      die "port $p ($node) is already in use by another process; stop it, or set TASKER_CLUSTER_AMQP_PORT / TASKER_CLUSTER_DIST_PORT"
    fi
  done
  # The message store and the logs hold task data, the cookie must stay private: this user only.
  mkdir -p "$RMQC_HOME" "$dir/mnesia" "$log_dir"
  chmod 700 "$RMQC_DIR" "$RMQC_HOME" "$dir" "$dir/mnesia" "$log_dir"
  echo '[].' >"$dir/enabled_plugins"   # no management plugin: faster boot, less memory
  : >"$dir/rabbitmq-env.conf"           # keep /etc/rabbitmq/rabbitmq-env.conf out of it
  cat >"$dir/rabbitmq.conf" <<EOF
# Written by cargo-make/services.sh cluster-start on every start: edit the script, not this file.
# guest/guest is allowed because we only listen on 127.0.0.1 (loopback_users: guest from
# loopback only, RabbitMQ's default).
# The same limits as the single node (cargo-make/lib/rabbitmq.sh); see there why.
vm_memory_high_watermark.relative = 0.2
disk_free_limit.absolute = 50MB
EOF
  # {LOCK_FD}>&- : the node must not inherit our lock's descriptor.
  if ! (cd "$dir" && rmqc "$n" "$RMQ_BIN/rabbitmq-server" -detached) \
      >"$log_dir/startup.log" 2>&1 </dev/null {LOCK_FD}>&-; then
    show_log_tail "$log_dir/startup.log"
    die "rabbitmq-server -detached failed for $node"
  fi
}

rmqc_wait() {
  local n="$1" node log_dir
  [[ -n "${RMQC_LAUNCHED_AT[$n]:-}" ]] || return 0   # was already running
  node="$(rmqc_node "$n")"
  log_dir="$(rmqc_log_dir "$n")"
  # As rmq_wait: `wait PIDFILE` waits for the pid file, then for the app to boot. A node that was
  # in the cluster when it went down also waits here for its peers' tables.
  if ! rmqc "$n" timeout 150 "$RMQ_BIN/rabbitmqctl" -q -n "$node" wait --timeout 120 "$(rmqc_pid_file "$n")" \
      >"$log_dir/wait.log" 2>&1 </dev/null {LOCK_FD}>&-; then
    show_log_tail "$log_dir/wait.log"
    show_log_tail "$log_dir/startup.log"
    show_log_tail "$(rmqc_log "$n")"
    die "rabbitmq cluster: $node did not come up"
  fi
  port_open "$(rmqc_amqp_port "$n")" \
    || { show_log_tail "$(rmqc_log "$n")"; die "rabbitmq cluster: $node booted but nothing listens on $(rmqc_amqp_port "$n")"; }
  log "rabbitmq cluster: $node up on 127.0.0.1:$(rmqc_amqp_port "$n") in $(since "${RMQC_LAUNCHED_AT[$n]}")"
}

# rmqc_status_nodes N KEY: the nodes under KEY (running_nodes, disk_nodes) of `cluster_status`
# as node N sees it, one a line.
rmqc_status_nodes() {
  local n="$1" key="$2" json
  json="$(rmqc_ctl "$n" cluster_status --formatter json </dev/null {LOCK_FD}>&-)" || return 1
  python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1]).get(sys.argv[2]) or []))' "$json" "$key"
}

# Is node N (N > 1) a member of node 1's cluster, as N itself remembers it?
rmqc_member() {
  local nodes
  nodes="$(rmqc_status_nodes "$1" disk_nodes)" || return 1
  grep -qxF "$(rmqc_node 1)" <<<"$nodes"
}

# Node N joins node 1's cluster (RabbitMQ resets N's own data on the way: a node that has just
# booted alone has none worth keeping).
rmqc_join() {
  local n="$1" node started step log_file
  node="$(rmqc_node "$n")"
  log_file="$(rmqc_log_dir "$n")/join.log"
  started="$(now_ms)"
  : >"$log_file"
  for step in stop_app "join_cluster $(rmqc_node 1)" start_app; do
    # shellcheck disable=SC2086 # step is a command and its argument
    if ! rmqc_ctl "$n" $step >>"$log_file" 2>&1 </dev/null {LOCK_FD}>&-; then
      show_log_tail "$log_file"
      show_log_tail "$(rmqc_log "$n")"
      die "rabbitmq cluster: $node: rabbitmqctl $step failed"
    fi
  done
  log "rabbitmq cluster: $node joined $(rmqc_node 1) in $(since "$started")"
}

# Wait until node N sees COUNT running nodes (or, with a second node M, until N sees M running),
# bounded: a node that has just booted or joined may take a moment to show in its peers' view.
rmqc_await_running() {
  local n="$1" want="$2" running i
  for ((i = 0; i < 100; i++)); do   # up to ~20 s (each check is a rabbitmqctl call, ~0.2 s)
    running="$(rmqc_status_nodes "$n" running_nodes || true)"
    if [[ "$want" =~ ^[0-9]+$ ]]; then
      (($(grep -c . <<<"$running") >= want)) && return 0
    elif grep -qxF "$want" <<<"$running"; then
      return 0
    fi
    sleep 0.1
  done
  log "rabbitmq cluster: $(rmqc_node "$n") sees running: ${running//$'\n'/ }"
  return 1
}

# All the nodes, booted in parallel; then nodes 2.. join node 1 unless they already belong to it.
rmqc_start() {
  local started n
  started="$(now_ms)"
  [[ -x "$RMQ_BIN/rabbitmq-server" ]] || die "rabbitmq-server is installed but $RMQ_BIN/rabbitmq-server is missing"
  mkdir -p "$RMQC_DIR"
  chmod 700 "$RMQC_DIR"
  rmqc_epmd_start
  for n in $(rmqc_nodes); do rmqc_launch "$n"; done
  for n in $(rmqc_nodes); do rmqc_wait "$n"; done
  for n in $(rmqc_nodes); do
    ((n > 1)) || continue
    if rmqc_member "$n"; then
      [[ -z "${RMQC_LAUNCHED_AT[$n]:-}" ]] || log "rabbitmq cluster: $(rmqc_node "$n") is a member of $(rmqc_node 1)'s cluster already"
    else
      rmqc_join "$n"
    fi
  done
  if ! rmqc_await_running 1 "$RMQC_SIZE"; then
    rmqc_ctl 1 cluster_status >&2 </dev/null {LOCK_FD}>&- || true
    die "rabbitmq cluster: cluster_status on $(rmqc_node 1) does not show $RMQC_SIZE running nodes"
  fi
  log "rabbitmq cluster: $RMQC_SIZE nodes running in $(since "$started") ($(rmqc_urls))"
}

# Node N again (after rmqc_kill): boot it, join if it lost its membership, wait until a peer sees
# it running.
rmqc_node_start() {
  local n="$1" node started peer=""
  node="$(rmqc_node "$n")"
  started="$(now_ms)"
  [[ -x "$RMQ_BIN/rabbitmq-server" ]] || die "rabbitmq-server is installed but $RMQ_BIN/rabbitmq-server is missing"
  local m
  for m in $(rmqc_nodes); do
    if ((m != n)) && rmqc_running "$m"; then peer="$m"; break; fi
  done
  [[ -n "$peer" ]] || die "no other node of the cluster is running; start the whole cluster: $0 cluster-start"
  mkdir -p "$RMQC_DIR"
  chmod 700 "$RMQC_DIR"
  rmqc_epmd_start
  rmqc_launch "$n"
  rmqc_wait "$n"
  if ((n > 1)) && ! rmqc_member "$n"; then rmqc_join "$n"; fi
  if ! rmqc_await_running "$peer" "$node"; then
    die "rabbitmq cluster: $node is up but $(rmqc_node "$peer") does not see it running"
  fi
  log "rabbitmq cluster: $node running and in the cluster in $(since "$started")"
}

# SIGKILL node N's beam.smp (a crash, not a shutdown) and print its pid once it is gone.
rmqc_kill() {
  local n="$1" pid i
  pid="$(rmqc_pid "$n")" || die "rabbitmq cluster: $(rmqc_node "$n") is not running"
  kill -KILL "$pid" || die "could not kill pid $pid"
  for ((i = 0; i < 50; i++)); do   # up to 5 s; SIGKILL is not up to the process
    pid_alive "$pid" || break
    sleep 0.1
  done
  pid_alive "$pid" && die "rabbitmq cluster: $(rmqc_node "$n") (pid $pid) still alive after SIGKILL"
  log "rabbitmq cluster: killed $(rmqc_node "$n") (pid $pid)"
  echo "$pid"
}

rmqc_stop_node() {
  local n="$1" node pid pid_file started
  node="$(rmqc_node "$n")"
  pid_file="$(rmqc_pid_file "$n")"
  started="$(now_ms)"
  pid="$(rmqc_pid "$n" || true)"
  if ! pid_alive "$pid"; then
    log "rabbitmq cluster: $node not running"
  elif [[ "$(tr -dc '0-9' <"$pid_file" 2>/dev/null)" != "$pid" ]]; then
    # Still booting (no pid file of its own yet): the CLI can't reach it reliably.
    log "rabbitmq cluster: stopping $node (pid $pid), which never finished booting"
    terminate "$pid" "$node"
    log "rabbitmq cluster: $node stopped in $(since "$started")"
  else
    # `stop PIDFILE` returns only once the OS process has exited.
    if ! rmqc_ctl "$n" stop "$pid_file" >"$(rmqc_log_dir "$n")/stop.log" 2>&1 </dev/null; then
      log "rabbitmq cluster: rabbitmqctl stop failed for $node; terminating pid $pid"
      show_log_tail "$(rmqc_log_dir "$n")/stop.log"
      terminate "$pid" "$node"
    fi
    log "rabbitmq cluster: $node stopped in $(since "$started")"
  fi
  rm -f "$pid_file"
}

# Every node, in parallel (a clean stop takes ~3.5 s each; one after the other, three took 10 s),
# then the cluster's epmd. Keeps all data: cluster-start brings the same cluster back, booting
# the nodes in parallel too, which a whole cluster that went down at once needs: each node waits
# at boot for the peers that were running when it stopped.
rmqc_stop() {
  local n rc=0 pid pids=()
  for n in $(rmqc_nodes); do
    rmqc_stop_node "$n" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  local epmd
  epmd="$(find_epmd || true)"
  if rmqc_epmd_up; then
    # Only the cluster's own epmd (CLUSTER_EPMD_PORT, never the single node's: rmqc_check_ports),
    # and epmd itself refuses while a node is still registered with it.
    if ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" "$epmd" -names 2>/dev/null | grep -q '^name '; then
      warn "rabbitmq cluster: nodes still registered with the cluster's epmd on $CLUSTER_EPMD_PORT; left it running"
      rc=1
    else
      ERL_EPMD_PORT="$CLUSTER_EPMD_PORT" "$epmd" -kill >/dev/null 2>&1 || true
      log "rabbitmq cluster: epmd on $CLUSTER_EPMD_PORT stopped"
    fi
  fi
  return "$rc"
}

# The node that leads quorum queue QUEUE (vhost /), asked of any running node: the one that would
# be asked first may be the one that was just killed. Right after its leader died a queue shows
# no leader, or the dead one, until its Raft election is over (well under a second when a node is
# SIGKILLed: the distribution link drops at once): wait for a leader that is running, bounded.
rmqc_leader() {
  local queue="$1" n out leader asked deadline=$((SECONDS + 30))
  while :; do
    leader=""
    asked=""
    for n in $(rmqc_nodes); do
      rmqc_running "$n" || continue
      out="$(rmqc_ctl "$n" list_queues name type leader --formatter json </dev/null)" || continue
      asked="$n"
      # "TYPE LEADER" ("missing" if there is no such queue; LEADER empty during an election).
      leader="$(python3 -c '
import json, sys
queues = [q for q in json.loads(sys.argv[1]) if q.get("name") == sys.argv[2]]
print("%s %s" % (queues[0].get("type"), queues[0].get("leader") or "") if queues else "missing")
' "$out" "$queue")"
      case "$leader" in
        missing) die "no queue '$queue' in vhost / (as $(rmqc_node "$n") sees it)" ;;
        "quorum "*) leader="${leader#quorum }" ;;
        *) die "'$queue' is a ${leader%% *} queue, not a quorum queue" ;;
      esac
      break
    done
    [[ -n "$asked" ]] || die "no node of the cluster is running"
    if [[ "$leader" =~ ^tasker([0-9]+)@localhost$ ]] && rmqc_running "${BASH_REMATCH[1]}"; then
      echo "$leader"
      return 0
    fi
    ((SECONDS < deadline)) || die "quorum queue '$queue' has no running leader after 30 s (last seen: '${leader:-none}'; a majority of its members down?)"
    sleep 0.2
  done
}

rmqc_status() {
  local n
  for n in $(rmqc_nodes); do
    if rmqc_running "$n"; then
      printf '%-10s up    amqp://guest:guest@127.0.0.1:%s/%%2f  (%s, pid %s)\n' "cluster:" "$(rmqc_amqp_port "$n")" "$(rmqc_node "$n")" "$(rmqc_pid "$n")"
    elif rmqc_alive "$n"; then
      printf '%-10s half  %s (pid %s) is up, its AMQP port %s is closed\n' "cluster:" "$(rmqc_node "$n")" "$(rmqc_pid "$n")" "$(rmqc_amqp_port "$n")"
    else
      printf '%-10s down  %s\n' "cluster:" "$(rmqc_node "$n")"
    fi
  done
}
