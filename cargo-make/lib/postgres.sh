# shellcheck shell=bash
# The local PostgreSQL of cargo-make/services.sh: the main cluster (plain, on PG_PORT) and the
# TLS-only one of `tls-start` (on PG_TLS_PORT), each an ordinary process of this user (or of the
# postgres user, as root) with its data, socket and log in the state folder, never the machine's
# system service. Needs common.sh, and STATE (absolute), LOG_DIR, PG_PORT and PG_TLS_PORT set
# before it is sourced; starting a TLS cluster needs TLS_DIR (tls.sh) too. Starting runs under
# services.sh's lock (LOCK_FD).

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

  # {LOCK_FD}>&- : the daemon must not inherit our lock's descriptor (it would hold the lock forever).
  if ! pg_as "$PG_BIN/pg_ctl" -D "$data" -l "$logfile" -w -t 60 start >"$root/pg_ctl.log" 2>&1 {LOCK_FD}>&-; then
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

# The main cluster, restarted in place: every connection drops (the fault suite).
pg_restart() {
  pg_as "$PG_BIN/pg_ctl" -D "$(pg_root)/data" -l "$(pg_root)/postgresql.log" -m fast -w -t 60 restart \
    >"$(pg_root)/pg_ctl.log" 2>&1 || { show_log_tail "$(pg_root)/pg_ctl.log"; die "postgres did not restart"; }
  log "postgres: restarted"
}
