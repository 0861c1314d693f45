# shellcheck shell=bash
# The local RabbitMQ of cargo-make/services.sh: a node of its own ("tasker", with its own epmd)
# run as an ordinary process, with its configuration, message store and logs in the state
# folder, never the machine's system service. Needs common.sh and processes.sh, and STATE
# (absolute), LOG_DIR, AMQP_PORT, AMQPS_PORT, AMQP_DIST_PORT and EPMD_PORT set before it is
# sourced; the node's configuration names TLS_DIR's files (tls.sh). Starting runs under
# services.sh's lock (LOCK_FD).

RMQ_NODE="tasker@localhost"
RMQ_BIN=/usr/lib/rabbitmq/bin
RMQ_DIR="$STATE/rabbitmq"
RMQ_PID_FILE="$RMQ_DIR/rabbitmq.pid"
RMQ_LOG_DIR="$LOG_DIR/rabbitmq"
RMQ_LOG="$RMQ_LOG_DIR/$RMQ_NODE.log"

# Every variable that would otherwise point at /etc/rabbitmq, /var/lib/rabbitmq or /var/log.
# The CLI tools need the same HOME (the Erlang cookie lives there) and node name.
RMQ_ENV=(
  "HOME=$RMQ_DIR/home"
  "RABBITMQ_NODENAME=$RMQ_NODE"
  "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1"
  "RABBITMQ_NODE_PORT=$AMQP_PORT"
  "RABBITMQ_DIST_PORT=$AMQP_DIST_PORT"
  "RABBITMQ_MNESIA_BASE=$RMQ_DIR/mnesia"
  "RABBITMQ_LOG_BASE=$RMQ_LOG_DIR"
  "RABBITMQ_PID_FILE=$RMQ_PID_FILE"
  "RABBITMQ_ENABLED_PLUGINS_FILE=$RMQ_DIR/enabled_plugins"
  "RABBITMQ_CONFIG_FILE=$RMQ_DIR/rabbitmq.conf"
  "RABBITMQ_ADVANCED_CONFIG_FILE=$RMQ_DIR/advanced.config"
  "RABBITMQ_CONF_ENV_FILE=$RMQ_DIR/rabbitmq-env.conf"
  "ERL_EPMD_ADDRESS=127.0.0.1"
  # Without this the distribution port listens on 0.0.0.0; loopback is all a dev node needs.
  "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS=-kernel inet_dist_use_interface {127,0,0,1}"
  "ERL_EPMD_PORT=$EPMD_PORT"
  "ERL_CRASH_DUMP=$RMQ_LOG_DIR/erl_crash.dump"
)
rmq() { env "${RMQ_ENV[@]}" "$@"; }

amqp_url() { echo "amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"; }
amqps_url() { echo "amqps://guest:guest@localhost:$AMQPS_PORT/%2f"; }

# The broker's pid: from its pid file, or -- while it boots and hasn't written one yet, e.g. when a
# start failed half-way -- the beam.smp whose command line carries our own HOME (unique per
# state folder, so never somebody else's node).
rmq_pid() {
  if [[ -s "$RMQ_PID_FILE" ]]; then
    tr -dc '0-9' <"$RMQ_PID_FILE"
    return 0
  fi
  local pid cmdline
  for pid in $(pgrep -x beam.smp || true); do
    cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
    if [[ "$cmdline" == *" -home $RMQ_DIR/home "* ]]; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}
rmq_running() { local pid; pid="$(rmq_pid || true)"; pid_alive "$pid" && port_open "$AMQP_PORT"; }

find_epmd() { command -v epmd || compgen -G '/usr/lib/erlang/erts-*/bin/epmd' | head -n 1; }

# Start is split in two so PostgreSQL can start while the broker boots (~5 s, the slow one):
# rmq_launch returns at once, rmq_wait blocks until it is ready.
RMQ_LAUNCHED_AT=""
rmq_launch() {
  RMQ_LAUNCHED_AT="$(now_ms)"
  # The message store and the broker's logs hold task data: this user only (also for folders
  # an older version of this script left open).
  mkdir -p "$RMQ_DIR" "$RMQ_LOG_DIR"
  chmod 700 "$RMQ_DIR" "$RMQ_LOG_DIR"
  if [[ -d "$RMQ_DIR/mnesia" ]]; then chmod 700 "$RMQ_DIR/mnesia"; fi
  [[ -x "$RMQ_BIN/rabbitmq-server" ]] || die "rabbitmq-server is installed but $RMQ_BIN/rabbitmq-server is missing"
  if rmq_running; then
    log "rabbitmq: already running on 127.0.0.1:$AMQP_PORT (pid $(rmq_pid))"
    port_open "$AMQPS_PORT" || log "rabbitmq: no amqps:// on $AMQPS_PORT (started by an older services.sh); \`$0 stop\` and start again to get it"
    RMQ_LAUNCHED_AT=""
    return 0
  fi
  local old_pid
  old_pid="$(rmq_pid || true)"
  if pid_alive "$old_pid"; then
    # Alive but not listening: a previous start still booting; let `wait` below finish it.
    log "rabbitmq: pid $old_pid is booting; waiting for it"
  else
    rm -f "$RMQ_PID_FILE"
    local p
    for p in "$AMQP_PORT" "$AMQPS_PORT" "$AMQP_DIST_PORT"; do
      if port_open "$p"; then
        die "port $p is already in use by another process (another checkout's services? stop them there, or set TASKER_AMQP_PORT / TASKER_AMQPS_PORT / TASKER_AMQP_DIST_PORT)"
      fi
    done
    mkdir -p "$RMQ_DIR/home" "$RMQ_DIR/mnesia" "$RMQ_LOG_DIR"
    chmod 700 "$RMQ_DIR/home"   # the Erlang cookie must not be readable by others
    echo '[].' >"$RMQ_DIR/enabled_plugins"   # no management plugin: faster boot, less memory
    : >"$RMQ_DIR/rabbitmq-env.conf"           # keep /etc/rabbitmq/rabbitmq-env.conf out of it
    cat >"$RMQ_DIR/rabbitmq.conf" <<EOF
# Written by cargo-make/services.sh on every start: edit the script, not this file.
# guest/guest is allowed because we only listen on 127.0.0.1.
# A dev broker sharing a 2-core machine with builds: block publishers early rather than swap.
vm_memory_high_watermark.relative = 0.2
# RabbitMQ's own default, written out on purpose: a disk alarm blocks every publisher, and CI
# disks can be small; never raise it to a RAM-relative limit here.
disk_free_limit.absolute = 50MB
# amqps:// beside plain AMQP, with the throwaway CA's certificate (docs/tls.md).
listeners.ssl.local = 127.0.0.1:$AMQPS_PORT
ssl_options.cacertfile = $TLS_DIR/ca.pem
ssl_options.certfile = $TLS_DIR/server.pem
ssl_options.keyfile = $TLS_DIR/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
    # {LOCK_FD}>&- : the broker (and the epmd it spawns) must not inherit our lock's descriptor.
    if ! (cd "$RMQ_DIR" && rmq "$RMQ_BIN/rabbitmq-server" -detached) >"$RMQ_LOG_DIR/startup.log" 2>&1 {LOCK_FD}>&-; then
      show_log_tail "$RMQ_LOG_DIR/startup.log"
      die "rabbitmq-server -detached failed"
    fi
  fi
}

rmq_wait() {
  [[ -n "$RMQ_LAUNCHED_AT" ]] || return 0   # was already running
  # `wait PIDFILE` waits for the pid file, then for the app to boot; `await_startup` would fail
  # at once if the node had not registered yet. Bounded twice: by the CLI and by timeout(1).
  if ! timeout 120 env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" wait --timeout 90 "$RMQ_PID_FILE" \
      >"$RMQ_LOG_DIR/wait.log" 2>&1 {LOCK_FD}>&-; then
    show_log_tail "$RMQ_LOG_DIR/wait.log"
    show_log_tail "$RMQ_LOG_DIR/startup.log"
    show_log_tail "$RMQ_LOG"
    die "rabbitmq did not come up"
  fi
  port_open "$AMQP_PORT" || { show_log_tail "$RMQ_LOG"; die "rabbitmq booted but nothing listens on $AMQP_PORT"; }
  log "rabbitmq: up on 127.0.0.1:$AMQP_PORT in $(since "$RMQ_LAUNCHED_AT") (node $RMQ_NODE, log $RMQ_LOG)"
}

rmq_stop() {
  local pid started
  pid="$(rmq_pid || true)"
  started="$(now_ms)"
  if pid_alive "$pid" && [[ ! -s "$RMQ_PID_FILE" ]]; then
    # Still booting (no pid file yet): the CLI can't reach it reliably; SIGTERM stops the VM.
    log "rabbitmq: stopping pid $pid, which never finished booting"
    terminate "$pid" rabbitmq
    log "rabbitmq: stopped in $(since "$started")"
  elif pid_alive "$pid"; then
    # `stop PIDFILE` returns only once the OS process has exited.
    if ! timeout 90 env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" stop "$RMQ_PID_FILE" \
        >"$RMQ_LOG_DIR/stop.log" 2>&1; then
      log "rabbitmq: rabbitmqctl stop failed; terminating pid $pid"
      show_log_tail "$RMQ_LOG_DIR/stop.log"
      terminate "$pid" rabbitmq
    fi
    log "rabbitmq: stopped in $(since "$started")"
  else
    log "rabbitmq: not running"
  fi
  rm -f "$RMQ_PID_FILE"
  # epmd outlives the broker. It is ours (own port), but only kill it once no node is left on it.
  local epmd
  epmd="$(find_epmd || true)"
  if [[ -n "$epmd" ]] && port_open "$EPMD_PORT"; then
    if ! ERL_EPMD_PORT="$EPMD_PORT" "$epmd" -names 2>/dev/null | grep -q '^name '; then
      ERL_EPMD_PORT="$EPMD_PORT" "$epmd" -kill >/dev/null 2>&1 || true
    fi
  fi
}

# rmq_worker_users PREFIX NAME=NAMESPACES...: a broker user per worker role: `NAME=ns1,ns2` with
# the queue prefix. RabbitMQ's permissions are regular expressions on object names: configure
# nothing (the orchestrator declares the queues), write only <prefix>.results (the results
# exchange: the default exchange would reach every queue), read only <prefix>.steps.<ns>.
# Prints `NAME URL` per user.
rmq_worker_users() {
  rmq_users worker "$@"
}

# rmq_orchestrator_user PREFIX NAME: the orchestrators' own broker user, instead of `guest` (an
# administrator every local process knows the password of): it may declare, write and read the
# objects of <prefix> only (`<prefix>.steps.*`, `<prefix>.results`, `<prefix>.dead`), and write
# to the default exchange, through which it publishes steps and dead letters. No tags: it is no
# administrator. Prints `NAME URL`.
rmq_orchestrator_user() {
  rmq_users orchestrator "$1" "$2=*"
}

# rmq_users KIND PREFIX NAME=NAMESPACES...: the users of rmq_worker_users (KIND worker) or
# rmq_orchestrator_user (KIND orchestrator), written in one `rabbitmqctl import_definitions`,
# passwords stored as RabbitMQ's salted SHA-256, so N users cost one call (~1.5 s), not 2N. A new
# password each time. Prints `NAME URL` per user.
rmq_users() {
  local kind="$1" prefix="$2"
  shift 2
  local defs urls
  defs="$(mktemp)"
  urls="$(python3 - "$kind" "$prefix" "$AMQP_PORT" "$defs" "$@" <<'PY'
import base64, hashlib, json, os, re, sys
kind, prefix, port, out, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
def rx(name):  # a name, `*` for any run of characters, as a regular expression
    return ".*".join(re.escape(part) for part in name.split("*"))
users, perms, lines = [], [], []
for spec in specs:
    name, _, namespaces = spec.partition("=")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name) or not namespaces:
        sys.exit(f"{kind} users: {spec!r}: expected NAME=ns1,ns2 (letters, digits, _ . - in NAME)")
    password = os.urandom(18).hex()
    salt = os.urandom(4)
    hashed = base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()
    users.append({"name": name, "password_hash": hashed, "hashing_algorithm":
                  "rabbit_password_hashing_sha256", "tags": []})
    if kind == "orchestrator":
        own = f"^{rx(prefix)}\\..*$"
        perms.append({"user": name, "vhost": "/", "configure": own,
                      "write": f"^({rx(prefix)}\\..*|amq\\.default)$", "read": own})
    else:
        alternatives = "|".join(rx(n.strip()) for n in namespaces.split(",") if n.strip())
        perms.append({"user": name, "vhost": "/", "configure": "^$",
                      "write": f"^{rx(prefix)}\\.results$",
                      "read": f"^{rx(prefix)}\\.steps\\.({alternatives})(@high|@low)?$"})
    lines.append(f"{name} amqp://{name}:{password}@127.0.0.1:{port}/%2f")
json.dump({"users": users, "permissions": perms}, open(out, "w"))
print("\n".join(lines))
PY
)" || { rm -f "$defs"; die "$kind users: bad arguments"; }
  if ! env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" import_definitions "$defs" >/dev/null; then
    rm -f "$defs"
    die "$kind users: rabbitmqctl import_definitions failed"
  fi
  rm -f "$defs"
  printf '%s\n' "$urls"
}
