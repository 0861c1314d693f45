#!/usr/bin/env bash
# Local PostgreSQL + RabbitMQ for development, tests and CI.
#
#   cargo-make/services.sh start    start both (idempotent); cargo-make/ensure-deps.sh installs
#                                   them with apt-get if missing
#   cargo-make/services.sh stop     stop Tasker processes (<state>/run/*.pid), PostgreSQL and RabbitMQ
#   cargo-make/services.sh status   show what is up (exit 1 if a service is down)
#   cargo-make/services.sh env      print `export` lines: eval "$(cargo-make/services.sh env)"
#   cargo-make/services.sh stop-procs  stop only the Tasker processes, leave the services up
#   cargo-make/services.sh pg-restart  restart the local PostgreSQL in place (the fault suite)
#   cargo-make/services.sh rabbitmqctl ARGS  rabbitmqctl against the local broker
#   cargo-make/services.sh worker-users PREFIX NAME=NAMESPACES...  a broker user per worker role
#                                   (NAMESPACES: comma-separated, `*` any run of characters) that
#                                   may read only those namespaces' step queues of PREFIX and write
#                                   only its results exchange; prints `NAME URL` per user (a new
#                                   password each time; one rabbitmqctl call for them all)
#   cargo-make/services.sh tls-start  also start a PostgreSQL that takes TLS connections only,
#                                   and print `export` lines for it, the amqps:// URL and the CA
#                                   (tests/tls.rs, docs/tls.md)
#
# TLS: a throwaway CA and a certificate for localhost/127.0.0.1 are made with openssl on the first
# start (<state>/tls/); RabbitMQ takes amqps:// on TASKER_AMQPS_PORT beside plain AMQP, and
# `tls-start` runs a second PostgreSQL cluster with ssl = on and only `hostssl` in pg_hba.conf.
# The main cluster stays plain, so nothing else pays for encryption it did not ask for.
#
# Everything (data, logs, pid files, sockets) lives in one state folder so that a checkout never
# touches the machine's system services and `rm -rf .tasker` is a full reset:
#   TASKER_HOME            state folder (default: <repo>/.tasker)
#   TASKER_PG_PORT         PostgreSQL port (default 55432)
#   TASKER_AMQP_PORT       RabbitMQ AMQP port (default 55672)
#   TASKER_AMQP_DIST_PORT  RabbitMQ's Erlang distribution port (default 55673)
#   TASKER_EPMD_PORT       Erlang port mapper port (default 55674)
#   TASKER_AMQPS_PORT      RabbitMQ amqps:// port (default 55671)
#   TASKER_PG_TLS_PORT     port of the TLS-only PostgreSQL of `tls-start` (default 55433)
#   DATABASE_URL / AMQP_URL  if already set (to anything but the URL this script hands out), that
#                            service is external: never started or stopped here.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${TASKER_HOME:-$ROOT/.tasker}"
PG_PORT="${TASKER_PG_PORT:-55432}"
AMQP_PORT="${TASKER_AMQP_PORT:-55672}"
# Must be set explicitly: RabbitMQ's default is AMQP port + 20000, which overflows for 55672.
AMQP_DIST_PORT="${TASKER_AMQP_DIST_PORT:-55673}"
# An epmd of our own (not the shared 4369) so that two checkouts (say a developer's and CI's) can
# both run a node called "tasker", and so that `epmd -kill` never hits anybody else's nodes.
EPMD_PORT="${TASKER_EPMD_PORT:-55674}"
AMQPS_PORT="${TASKER_AMQPS_PORT:-55671}"
PG_TLS_PORT="${TASKER_PG_TLS_PORT:-55433}"
RMQ_NODE="tasker@localhost"
RMQ_BIN=/usr/lib/rabbitmq/bin

log() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

# Show the end of a log file so that a failure explains itself without a second command.
show_log_tail() {
  local file="$1"
  if [[ -r "$file" ]]; then
    printf '[services] ---- last 30 lines of %s ----\n' "$file" >&2
    tail -n 30 "$file" >&2 || true
    printf '[services] ---- end of %s ----\n' "$file" >&2
  else
    printf '[services] (no log at %s)\n' "$file" >&2
  fi
}

# Milliseconds since the epoch; strips the decimal point whatever the locale uses for it.
now_ms() { local us="${EPOCHREALTIME//[!0-9]/}"; echo $((us / 1000)); }
since() { local ms=$(($(now_ms) - $1)); printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)); }

port_open() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
# Alive = exists and is not a zombie. On machines whose PID 1 reaps orphans lazily (containers,
# micro-VMs) a killed daemon lingers as a zombie, and `kill -0` alone would call it alive.
pid_alive() {
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null || return 1
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"   # the fields after "(comm) "; the first is the state
  [[ "${stat:0:1}" != Z ]]
}

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# Is port $1 inside the kernel's port list $2 ("a,b-c,...")?
in_port_list() {
  local port="$1" item items
  IFS=, read -ra items <<<"$2"
  for item in "${items[@]}"; do
    item="${item// /}"
    if [[ "$item" == *-* ]]; then
      if ((port >= ${item%-*} && port <= ${item#*-})); then return 0; fi
    elif [[ -n "$item" ]] && ((port == item)); then
      return 0
    fi
  done
  return 1
}

# Our default ports (55432, 55672...) lie inside Linux's ephemeral range (32768-60999): any
# outgoing connection on the machine may get one as its source port, and until that socket (or its
# 60 s TIME_WAIT) is gone the server cannot bind it ("Address already in use" with nothing
# listening). Seen for real: an epmd client connection took 56432. As root, reserve our ports so
# the kernel never hands them out automatically (explicit binds still work); not persistent, so
# done on every start. Not root: nothing we can do; the bind error then says what happened.
reserve_ports() {
  local file=/proc/sys/net/ipv4/ip_local_reserved_ports current port missing=()
  is_root && [[ -w "$file" ]] || return 0
  current="$(cat "$file")"
  for port in "$@"; do
    in_port_list "$port" "$current" || missing+=("$port")
  done
  ((${#missing[@]} > 0)) || return 0
  local joined
  joined="$(IFS=,; echo "${missing[*]}")"
  if echo "${current:+$current,}$joined" >"$file" 2>/dev/null; then
    log "reserved ports $joined (net.ipv4.ip_local_reserved_ports) so no outgoing connection takes them"
  else
    log "warning: could not reserve ports $joined in $file"
  fi
}

# Logs, pid files and the broker's message store hold task data: readable by this user only
# (umask for what is created from here on, chmod for folders an older version left open). The
# state folder itself stays traversable so the postgres user can reach its cluster in pg/.
umask 077
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"   # absolute, since it ends up in configs and pid files
RUN_DIR="$STATE/run"
LOG_DIR="$STATE/logs"
mkdir -p "$RUN_DIR" "$LOG_DIR"
chmod 711 "$STATE"
chmod 700 "$RUN_DIR" "$LOG_DIR"

# --------------------------------------------------------------------------------------------
# Packages: cargo-make/ensure-deps.sh installs what is missing (see cmd_start), from the one list
# cargo-make/dependencies.txt (group "services").
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------
PG_BIN=""
find_pg_bin() {
  local initdb
  initdb="$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1 || true)"
  [[ -n "$initdb" ]] && PG_BIN="$(dirname "$initdb")"
}

ensure_pg_installed() {
  find_pg_bin || die "no initdb under /usr/lib/postgresql/*/bin although ensure-deps.sh found PostgreSQL installed"
}

# initdb and postgres refuse to run as root: as root we run them as the postgres user.
if is_root; then PG_USER=postgres; else PG_USER="$(id -un)"; fi

pg_as() {
  # cd / so the postgres user never complains about an unreadable current directory
  if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# Where the cluster lives. Normally <state>/pg, but the postgres user must be able to reach it and
# a Unix socket path must stay under ~107 bytes; if either fails we use /var/tmp/tasker-<hash>/pg
# and record that choice in <state>/pg.location so status/stop/env find it again.
PG_LOCATION_FILE="$STATE/pg.location"
pg_root() {
  if [[ -s "$PG_LOCATION_FILE" ]]; then cat "$PG_LOCATION_FILE"; else echo "$STATE/pg"; fi
}

choose_pg_root() {
  [[ -s "$PG_LOCATION_FILE" ]] && return 0
  local candidate="$STATE/pg" reason=""
  mkdir -p "$candidate"
  if is_root; then
    chown postgres:postgres "$candidate"
    if ! runuser -u postgres -- test -w "$candidate" -a -x "$candidate" 2>/dev/null; then
      reason="the postgres user cannot reach $candidate (a parent folder is not world-traversable)"
    fi
  fi
  # ".../sock/.s.PGSQL.NNNNN" must fit in sun_path (108 bytes incl. NUL)
  if [[ -z "$reason" ]] && ((${#candidate} + ${#PG_PORT} + 16 > 100)); then
    reason="the socket path under $candidate would be too long"
  fi
  if [[ -n "$reason" ]]; then
    rmdir "$candidate" 2>/dev/null || true
    local hash
    hash="$(printf '%s' "$STATE" | sha256sum | cut -c1-12)"
    candidate="/var/tmp/tasker-$hash/pg"
    mkdir -p "$candidate"
    chmod 755 "/var/tmp/tasker-$hash"
    if is_root; then chown postgres:postgres "$candidate"; fi
    echo "$candidate" >"$PG_LOCATION_FILE"
    log "postgres: $reason; using $candidate instead (recorded in $PG_LOCATION_FILE)"
  fi
}

pg_url() { echo "postgres://$PG_USER@127.0.0.1:$PG_PORT/tasker"; }

# The TLS-only cluster of `tls-start` lives next to the main one (same parent, so the postgres
# user reaches it too). Its URL checks the server's certificate against our CA.
pg_tls_root() { echo "$(pg_root)-tls"; }
pg_tls_url() {
  echo "postgres://$PG_USER@localhost:$PG_TLS_PORT/tasker?sslmode=verify-full&sslrootcert=$TLS_DIR/ca.pem"
}

# pg_running [ROOT]: is the cluster in ROOT (default: the main one) up?
pg_running() {
  [[ -n "$PG_BIN" ]] || find_pg_bin || return 1
  local data
  data="${1:-$(pg_root)}/data"
  [[ -f "$data/PG_VERSION" ]] || return 1
  pg_as "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1
}

pg_start() { choose_pg_root; pg_start_cluster "$(pg_root)" "$PG_PORT" ""; }
pg_tls_start() { choose_pg_root; pg_start_cluster "$(pg_tls_root)" "$PG_TLS_PORT" tls; }

# pg_start_cluster ROOT PORT TLS: initdb (first time), settings, start, database `tasker`. TLS
# non-empty: ssl = on with our certificate, and pg_hba.conf accepts TLS connections only.
pg_start_cluster() {
  local root="$1" port="$2" tls="$3" started data logfile what=postgres link=postgresql.log
  [[ -z "$tls" ]] || { what="postgres (TLS)"; link=postgresql-tls.log; }
  started="$(now_ms)"
  ensure_pg_installed
  data="$root/data"
  if pg_running "$root"; then
    log "$what: already running on 127.0.0.1:$port ($data)"
    return 0
  fi
  logfile="$root/postgresql.log"
  mkdir -p "$root/sock"
  if is_root; then chown postgres:postgres "$root" "$root/sock"; fi
  # The cluster's log sits next to it (the server writes it as its own user); link it from logs/.
  ln -sfn "$logfile" "$LOG_DIR/$link"

  if [[ ! -f "$data/PG_VERSION" ]]; then
    log "$what: initdb in $data"
    pg_as "$PG_BIN/initdb" -D "$data" --auth=trust -E UTF8 --locale=C.UTF-8 >"$root/initdb.log" 2>&1 \
      || { show_log_tail "$root/initdb.log"; die "initdb failed"; }
    # Our settings go to a file of their own, rewritten on every start (see below).
    printf "\n# Tasker: settings managed by cargo-make/services.sh\ninclude_if_exists = 'tasker.conf'\n" \
      >>"$data/postgresql.conf"
  fi

  if port_open "$port"; then
    die "port $port is already in use by another process (another checkout's services? stop them there, or set TASKER_PG_PORT / TASKER_PG_TLS_PORT)"
  fi

  # Rewritten each start so a changed port or setting in this script takes effect.
  cat >"$data/tasker.conf" <<EOF
# Written by cargo-make/services.sh on every start: edit the script, not this file.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$root/sock'
# Tests, the orchestrator and workers each keep pools; 100 is easily exhausted.
max_connections = 300
# Durability stays ON: benchmarks measure against a durable floor, so never turn these off here.
fsync = on
synchronous_commit = on
full_page_writes = on
EOF
  if [[ -n "$tls" ]]; then
    # The server uses its key only if nobody else can read it.
    install -m 600 "$TLS_DIR/server.key" "$data/tasker-server.key"
    install -m 644 "$TLS_DIR/server.pem" "$data/tasker-server.pem"
    cat >>"$data/tasker.conf" <<EOF
ssl = on
ssl_cert_file = 'tasker-server.pem'
ssl_key_file = 'tasker-server.key'
hba_file = '$data/tasker_hba.conf'
EOF
    cat >"$data/tasker_hba.conf" <<EOF
# Written by cargo-make/services.sh: TLS connections only (a plain TCP connection is refused).
local   all  all                 trust
hostssl all  all  127.0.0.1/32   trust
EOF
    if is_root; then chown postgres:postgres "$data/tasker-server.key" "$data/tasker-server.pem" "$data/tasker_hba.conf"; fi
  fi
  if is_root; then chown postgres:postgres "$data/tasker.conf"; fi

  # 9>&- : the daemon must not inherit our lock file descriptor (it would hold the lock forever).
  if ! pg_as "$PG_BIN/pg_ctl" -D "$data" -l "$logfile" -w -t 60 start >"$root/pg_ctl.log" 2>&1 9>&-; then
    show_log_tail "$root/pg_ctl.log"
    show_log_tail "$logfile"
    if tail -n 20 "$logfile" 2>/dev/null | grep -q 'Address already in use'; then
      die "postgres could not bind 127.0.0.1:$port although nothing listens there: an outgoing connection holds it as its source port (see reserve_ports). Wait a minute and retry, or set TASKER_PG_PORT / TASKER_PG_TLS_PORT to a port below 32768"
    fi
    die "$what did not start"
  fi

  # Over the Unix socket, which both clusters trust.
  local psql=("$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$root/sock" -p "$port" -U "$PG_USER" -d postgres)
  if [[ -z "$(pg_as "${psql[@]}" -tA -c "SELECT 1 FROM pg_database WHERE datname = 'tasker'")" ]]; then
    pg_as "${psql[@]}" -c "CREATE DATABASE tasker" || die "could not create database tasker"
    log "$what: created database tasker"
  fi
  log "$what: up on 127.0.0.1:$port in $(since "$started") (data $data, log $logfile)"
}

# pg_stop [ROOT]: stop the cluster in ROOT (default: the main one), if it runs.
pg_stop() {
  find_pg_bin || return 0
  local root data what=postgres started
  root="${1:-$(pg_root)}"
  [[ -z "${1:-}" ]] || what="postgres (TLS)"
  data="$root/data"
  if ! pg_running "$root"; then
    [[ -n "${1:-}" ]] || log "$what: not running"
    return 0
  fi
  started="$(now_ms)"
  # fast = roll back open transactions and disconnect clients, then a clean shutdown checkpoint
  if ! pg_as "$PG_BIN/pg_ctl" -D "$data" -m fast -w -t 60 stop >"$root/pg_ctl.log" 2>&1; then
    show_log_tail "$root/pg_ctl.log"
    show_log_tail "$root/postgresql.log"
    log "ERROR: $what did not stop"
    return 1   # not die: stop must still go on to stop RabbitMQ
  fi
  log "$what: stopped in $(since "$started")"
}

# --------------------------------------------------------------------------------------------
# TLS material: a throwaway CA of this state folder and a server certificate it signs, for
# localhost and 127.0.0.1 (RabbitMQ's amqps:// listener, the TLS PostgreSQL, an https://
# orchestrator in tests). Made once; `rm -rf .tasker/tls` makes new ones at the next start.
# --------------------------------------------------------------------------------------------
TLS_DIR="$STATE/tls"

tls_material() {
  [[ -s "$TLS_DIR/ca.pem" && -s "$TLS_DIR/server.pem" && -s "$TLS_DIR/server.key" ]] && return 0
  command -v openssl >/dev/null || die "openssl is missing although ensure-deps.sh checked for it"
  mkdir -p "$TLS_DIR"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  (
    cd "$TLS_DIR"
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 3650 \
      -subj "/CN=Tasker throwaway CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=localhost"
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
      -extfile server.ext -out server.pem
    rm -f server.csr server.ext ca.srl
  ) >"$LOG_DIR/tls.log" 2>&1 || { show_log_tail "$LOG_DIR/tls.log"; die "openssl could not make the TLS material"; }
  # Tests and clients read the CA and the certificate; the keys stay with this user.
  chmod 755 "$TLS_DIR"
  chmod 644 "$TLS_DIR/ca.pem" "$TLS_DIR/server.pem"
  chmod 600 "$TLS_DIR/ca.key" "$TLS_DIR/server.key"
  log "tls: made a throwaway CA and a certificate for localhost and 127.0.0.1 in $TLS_DIR"
}

# --------------------------------------------------------------------------------------------
# RabbitMQ
# --------------------------------------------------------------------------------------------
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
    # 9>&- : the broker (and the epmd it spawns) must not inherit our lock descriptor.
    if ! (cd "$RMQ_DIR" && rmq "$RMQ_BIN/rabbitmq-server" -detached) >"$RMQ_LOG_DIR/startup.log" 2>&1 9>&-; then
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
      >"$RMQ_LOG_DIR/wait.log" 2>&1 9>&-; then
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

# --------------------------------------------------------------------------------------------
# Tasker processes (orchestrator, workers) started by demo.sh & co with pid files in run/
# --------------------------------------------------------------------------------------------

# TERM, then KILL after a bounded wait.
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

# A pid file is only trusted if its process started before the file was written: a pid reused by
# an unrelated, newer process must never be killed.
pid_file_process() {
  local file="$1" pid etimes started_at written_at
  pid="$(tr -dc '0-9' <"$file")"
  pid_alive "$pid" || return 1
  etimes="$(ps -o etimes= -p "$pid" 2>/dev/null | tr -d ' ')" || return 1
  [[ -n "$etimes" ]] || return 1
  started_at=$(($(date +%s) - etimes))
  written_at="$(stat -c %Y "$file")"
  ((started_at <= written_at + 2)) || return 1
  echo "$pid"
}

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

# Pre-set URLs mean "use that service, don't manage it" -- unless the URL is exactly the one this
# script hands out: after `eval "$(services.sh env)"` in a shell, `stop` must still stop ours.
EXTERNAL_PG=""
EXTERNAL_AMQP=""
if [[ -n "${DATABASE_URL:-}" && "$DATABASE_URL" != "$(pg_url)" ]]; then EXTERNAL_PG=1; fi
if [[ -n "${AMQP_URL:-}" && "$AMQP_URL" != "$(amqp_url)" ]]; then EXTERNAL_AMQP=1; fi

# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------

# One start/stop at a time per state folder (two terminals, or cargo-make running two tasks).
take_lock() {
  exec 9>"$RUN_DIR/services.lock"
  flock -w 300 9 || die "another services.sh start/stop has held $RUN_DIR/services.lock for 5 minutes"
}

cmd_start() {
  take_lock
  local started
  started="$(now_ms)"
  local ports=() deps=()
  [[ -n "$EXTERNAL_PG" ]] || { ports+=("$PG_PORT"); deps+=(services:postgresql); }
  [[ -n "$EXTERNAL_AMQP" ]] || { ports+=("$AMQP_PORT" "$AMQPS_PORT" "$AMQP_DIST_PORT" "$EPMD_PORT"); deps+=(services:rabbitmq-server services:openssl); }
  # What is missing gets installed (dpkg-query decides; apt-get when needed, services kept from
  # starting). 9>&- : nothing apt starts may inherit our lock.
  if ((${#deps[@]})) && ! "$ROOT/cargo-make/ensure-deps.sh" "${deps[@]}" 9>&-; then
    die "could not install what the services need (see above), or set DATABASE_URL/AMQP_URL to existing services"
  fi
  reserve_ports "${ports[@]}"
  [[ -n "$EXTERNAL_AMQP" ]] || tls_material
  # Broker first and in the background: PostgreSQL (~0.2-1 s) starts while it boots (~5 s).
  if [[ -n "$EXTERNAL_AMQP" ]]; then log "rabbitmq: AMQP_URL is set; using it, not starting one"; else rmq_launch; fi
  if [[ -n "$EXTERNAL_PG" ]]; then log "postgres: DATABASE_URL is set; using it, not starting one"; else pg_start; fi
  if [[ -z "$EXTERNAL_AMQP" ]]; then rmq_wait; fi
  log "services ready in $(since "$started") (state folder $STATE)"
  log "  DATABASE_URL=${DATABASE_URL:-$(pg_url)}"
  log "  AMQP_URL=${AMQP_URL:-$(amqp_url)}"
}

# The TLS-only PostgreSQL beside the services `start` runs, then what a process needs to use
# TLS everywhere, as `export` lines (TASKER_LOCAL_TLS_*: not configuration keys, so evaluating
# them changes nothing by itself).
cmd_tls_start() {
  take_lock
  [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; tls-start needs the local one (its amqps:// listener)"
  rmq_running || die "the local RabbitMQ is not running; start it first: $0 start"
  port_open "$AMQPS_PORT" \
    || die "the local RabbitMQ takes no amqps:// on $AMQPS_PORT: it was started by an older services.sh; restart it: $0 stop && $0 start"
  "$ROOT/cargo-make/ensure-deps.sh" services:postgresql services:openssl 9>&- \
    || die "could not install what the TLS PostgreSQL needs (see above)"
  reserve_ports "$PG_TLS_PORT"
  tls_material
  pg_tls_start
  printf 'export TASKER_LOCAL_TLS_CA_FILE=%q\n' "$TLS_DIR/ca.pem"
  printf 'export TASKER_LOCAL_TLS_CERT_FILE=%q\n' "$TLS_DIR/server.pem"
  printf 'export TASKER_LOCAL_TLS_KEY_FILE=%q\n' "$TLS_DIR/server.key"
  printf 'export TASKER_LOCAL_TLS_DATABASE_URL=%q\n' "$(pg_tls_url)"
  printf 'export TASKER_LOCAL_TLS_AMQP_URL=%q\n' "$(amqps_url)"
}

cmd_stop() {
  take_lock
  # Clients first, so the servers don't wait for their connections to go away.
  stop_tasker_processes
  local rc=0
  if [[ -n "$EXTERNAL_PG" ]]; then log "postgres: external (DATABASE_URL set); left alone"; else pg_stop || rc=1; fi
  pg_stop "$(pg_tls_root)" || rc=1
  if [[ -n "$EXTERNAL_AMQP" ]]; then log "rabbitmq: external (AMQP_URL set); left alone"; else rmq_stop || rc=1; fi
  return "$rc"
}

cmd_status() {
  local rc=0
  if [[ -n "$EXTERNAL_PG" ]]; then
    printf '%-10s external  %s\n' "postgres:" "$DATABASE_URL"
  elif pg_running; then
    printf '%-10s up    %s  (data %s)\n' "postgres:" "$(pg_url)" "$(pg_root)/data"
  else
    printf '%-10s down\n' "postgres:"
    rc=1
  fi
  if pg_running "$(pg_tls_root)"; then
    printf '%-10s up    %s  (TLS only, tls-start)\n' "postgres:" "$(pg_tls_url)"
  fi
  if [[ -n "$EXTERNAL_AMQP" ]]; then
    printf '%-10s external  %s\n' "rabbitmq:" "$AMQP_URL"
  elif rmq_running; then
    printf '%-10s up    %s  (pid %s)\n' "rabbitmq:" "$(amqp_url)" "$(rmq_pid)"
    if port_open "$AMQPS_PORT"; then printf '%-10s up    %s\n' "rabbitmq:" "$(amqps_url)"; fi
  else
    printf '%-10s down\n' "rabbitmq:"
    rc=1
  fi
  status_tasker_processes
  return "$rc"
}

# A broker user per worker role: `NAME=ns1,ns2` with the queue prefix. RabbitMQ's permissions
# are regular expressions on object names: configure nothing (the orchestrator declares the
# queues), write only <prefix>.results (the results exchange: the default exchange would reach
# every queue), read only <prefix>.steps.<ns>. Written in one `rabbitmqctl import_definitions`,
# passwords stored as RabbitMQ's salted SHA-256, so N users cost one call (~1.5 s), not 2N.
cmd_worker_users() {
  local prefix="${1:?usage: $0 worker-users PREFIX NAME=NAMESPACES...}"
  shift
  (($# > 0)) || die "usage: $0 worker-users PREFIX NAME=NAMESPACES..."
  [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; create its users there (docs/auth.md)"
  rmq_running || die "the local RabbitMQ is not running; start it with: $0 start"
  local defs urls
  defs="$(mktemp)"
  urls="$(python3 - "$prefix" "$AMQP_PORT" "$defs" "$@" <<'PY'
import base64, hashlib, json, os, re, sys
prefix, port, out, specs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def rx(name):  # a name, `*` for any run of characters, as a regular expression
    return ".*".join(re.escape(part) for part in name.split("*"))
users, perms, lines = [], [], []
for spec in specs:
    name, _, namespaces = spec.partition("=")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name) or not namespaces:
        sys.exit(f"worker-users: {spec!r}: expected NAME=ns1,ns2 (letters, digits, _ . - in NAME)")
    password = os.urandom(18).hex()
    salt = os.urandom(4)
    hashed = base64.b64encode(salt + hashlib.sha256(salt + password.encode()).digest()).decode()
    users.append({"name": name, "password_hash": hashed, "hashing_algorithm":
                  "rabbit_password_hashing_sha256", "tags": []})
    alternatives = "|".join(rx(n.strip()) for n in namespaces.split(",") if n.strip())
    perms.append({"user": name, "vhost": "/", "configure": "^$",
                  "write": f"^{rx(prefix)}\\.results$",
                  "read": f"^{rx(prefix)}\\.steps\\.({alternatives})$"})
    lines.append(f"{name} amqp://{name}:{password}@127.0.0.1:{port}/%2f")
json.dump({"users": users, "permissions": perms}, open(out, "w"))
print("\n".join(lines))
PY
)" || { rm -f "$defs"; die "worker-users: bad arguments"; }
  if ! env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" import_definitions "$defs" >/dev/null; then
    rm -f "$defs"
    die "worker-users: rabbitmqctl import_definitions failed"
  fi
  rm -f "$defs"
  printf '%s\n' "$urls"
}

cmd_env() {
  printf 'export DATABASE_URL=%q\n' "${DATABASE_URL:-$(pg_url)}"
  printf 'export AMQP_URL=%q\n' "${AMQP_URL:-$(amqp_url)}"
  printf 'export TASKER_HOME=%q\n' "$STATE"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) cmd_env ;;
  tls-start) cmd_tls_start ;;
  # Only the Tasker processes (demo.sh restarts its orchestrator/worker this way); services stay up.
  stop-procs) take_lock && stop_tasker_processes ;;
  # Restart the local PostgreSQL in place (every connection drops), for the fault suite.
  pg-restart)
    [[ -z "$EXTERNAL_PG" ]] || die "DATABASE_URL points at an external server; pg-restart only drives the local one"
    pg_running || die "the local PostgreSQL is not running; start it with: $0 start"
    pg_as "$PG_BIN/pg_ctl" -D "$(pg_root)/data" -l "$(pg_root)/postgresql.log" -m fast -w -t 60 restart \
      >"$(pg_root)/pg_ctl.log" 2>&1 9>&- || { show_log_tail "$(pg_root)/pg_ctl.log"; die "postgres did not restart"; }
    log "postgres: restarted"
    ;;
  worker-users) shift && cmd_worker_users "$@" ;;
  # rabbitmqctl against our own broker, e.g. `rabbitmqctl stop_app` in the broker-restart test.
  rabbitmqctl)
    shift
    [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; rabbitmqctl only drives the local one"
    # The node, not the AMQP port: after `stop_app` the port is closed but the node still runs.
    pid_alive "$(rmq_pid || true)" || die "the local RabbitMQ node is not running; start it with: $0 start"
    exec env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" "$@"
    ;;
  *)
    echo "usage: $0 start|stop|status|env|tls-start|stop-procs|pg-restart|worker-users PREFIX NAME=NS...|rabbitmqctl ARGS..." >&2
    exit 2
    ;;
esac
