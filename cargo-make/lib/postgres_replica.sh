# shellcheck shell=bash
# The streaming replica of `replica-start`: a hot standby of the main cluster, copied from it by
# pg_basebackup into <pg root>-replica (same parent, so the postgres user reaches it) and fed over
# 127.0.0.1 through the physical slot tasker_replica, which makes the primary keep the WAL the
# replica has not received. It is a throwaway: stopping it drops its slot and its data, so no WAL
# piles up on the primary while it is down, and the next replica-start copies afresh (seconds).
# The primary is never restarted.
# Needs postgres.sh, and PG_REPLICA_PORT set before it is sourced.

PG_REPLICA_SLOT=tasker_replica

pg_replica_root() { echo "$(pg_root)-replica"; }
pg_replica_url() { echo "postgres://$PG_USER@127.0.0.1:$PG_REPLICA_PORT/tasker"; }

# pg_primary_sql SQL: SQL on the main cluster over its Unix socket; prints bare values.
pg_primary_sql() {
  pg_as "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h "$(pg_root)/sock" -p "$PG_PORT" -U "$PG_USER" \
    -d postgres -c "$1"
}

# pg_until SECONDS COMMAND...: COMMAND every 0.1 s until it succeeds; fails after SECONDS.
pg_until() {
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@" >/dev/null 2>&1; do
    (($(now_ms) < deadline)) || return 1
    sleep 0.1
  done
}

# Does the primary take a replication connection from us over TCP (what pg_basebackup and the
# replica's WAL receiver open)?
pg_primary_replicates() {
  pg_as "$PG_BIN/psql" -X -q "host=127.0.0.1 port=$PG_PORT user=$PG_USER dbname=postgres replication=true" \
    -c IDENTIFY_SYSTEM
}

# What the primary needs, without a restart: wal_level and WAL senders (PG15 defaults: only
# checked), a pg_hba.conf line letting our user replicate from 127.0.0.1 (appended once, then a
# reload), and the slot.
pg_replica_prepare_primary() {
  local wal_level senders slots hba line="host replication $PG_USER 127.0.0.1/32 trust"
  wal_level="$(pg_primary_sql 'SHOW wal_level')"
  senders="$(pg_primary_sql 'SHOW max_wal_senders')"
  slots="$(pg_primary_sql 'SHOW max_replication_slots')"
  [[ "$wal_level" == replica || "$wal_level" == logical ]] \
    || die "the primary has wal_level = $wal_level; a replica needs replica (the default), which takes a restart"
  ((senders > 0 && slots > 0)) \
    || die "the primary has max_wal_senders = $senders, max_replication_slots = $slots; a replica needs both > 0 (default 10)"
  hba="$(pg_primary_sql 'SHOW hba_file')"
  if ! grep -qxF "$line" "$hba"; then
    printf '# Tasker: the streaming replica of services.sh replica-start\n%s\n' "$line" >>"$hba"
    pg_as "$PG_BIN/pg_ctl" -D "$(pg_root)/data" reload >/dev/null || die "pg_ctl reload of the primary failed"
    log "postgres: $hba now lets $PG_USER replicate from 127.0.0.1 (reloaded, not restarted)"
  fi
  # A reload takes effect asynchronously.
  pg_until 10 pg_primary_replicates \
    || die "the primary refuses replication connections from $PG_USER at 127.0.0.1:$PG_PORT (see $hba)"
  pg_primary_sql "SELECT pg_create_physical_replication_slot('$PG_REPLICA_SLOT', true)
    WHERE NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = '$PG_REPLICA_SLOT')" >/dev/null \
    || die "could not create the replication slot $PG_REPLICA_SLOT on the primary"
}

# pg_replica_basebackup ROOT: the copy goes to data.new and becomes data when complete, so a copy
# cut short is never started. -R: standby.signal, primary_conninfo and primary_slot_name.
pg_replica_basebackup() {
  local root="$1" started
  started="$(now_ms)"
  rm -rf "$root/data.new"
  pg_as "$PG_BIN/pg_basebackup" -D "$root/data.new" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" \
    -R -X stream -c fast -S "$PG_REPLICA_SLOT" >"$root/basebackup.log" 2>&1 \
    || { show_log_tail "$root/basebackup.log"; die "pg_basebackup from 127.0.0.1:$PG_PORT failed"; }
  mv "$root/data.new" "$root/data"
  log "postgres (replica): copied the primary in $(since "$started") (pg_basebackup, slot $PG_REPLICA_SLOT)"
}

# pg_replica_config ROOT: the primary's tasker.conf (a hot standby refuses to run with a lower
# max_connections than its primary), then the replica's own port and socket (the later line wins).
# Rewritten on every start, like the primary's.
pg_replica_config() {
  local root="$1"
  {
    cat "$(pg_root)/data/tasker.conf"
    printf '%s\n' "# replica-start: its own listener and socket; read-only queries while it replays" \
      "port = $PG_REPLICA_PORT" "unix_socket_directories = '$root/sock'" "hot_standby = on"
  } >"$root/data/tasker.conf"
  if is_root; then chown postgres:postgres "$root/data/tasker.conf"; fi
}

# Over the URL replica-env hands out: up, read-only (in recovery) and receiving WAL.
pg_replica_in_recovery() {
  [[ "$(pg_as "$PG_BIN/psql" -X -tA "$(pg_replica_url)" -c 'SELECT pg_is_in_recovery()')" == t ]]
}
pg_replica_streaming() {
  [[ "$(pg_as "$PG_BIN/psql" -X -tA "$(pg_replica_url)" -c 'SELECT status FROM pg_stat_wal_receiver')" == streaming ]]
}

# pg_replica_fail MESSAGE: its log, then stop it (running means it works: replica-start would
# take it as is), then die.
pg_replica_fail() {
  show_log_tail "$(pg_replica_root)/postgresql.log"
  pg_replica_stop || true
  die "$1"
}

# Copy (first time), settings, start; returns once it streams from the primary (running).
pg_replica_start() {
  local root data logfile started
  root="$(pg_replica_root)"
  data="$root/data"
  logfile="$root/postgresql.log"
  started="$(now_ms)"
  ensure_pg_installed
  if pg_running "$root"; then
    log "postgres (replica): already running on 127.0.0.1:$PG_REPLICA_PORT ($data)"
    return 0
  fi
  if port_open "$PG_REPLICA_PORT"; then
    die "port $PG_REPLICA_PORT is already in use by another process (set TASKER_PG_REPLICA_PORT)"
  fi
  pg_replica_prepare_primary
  mkdir -p "$root/sock"
  if is_root; then chown postgres:postgres "$root" "$root/sock"; fi
  ln -sfn "$logfile" "$LOG_DIR/postgresql-replica.log"
  [[ -f "$data/PG_VERSION" ]] || pg_replica_basebackup "$root"
  pg_replica_config "$root"
  # {LOCK_FD}>&- : the daemon must not inherit our lock's descriptor.
  if ! pg_as "$PG_BIN/pg_ctl" -D "$data" -l "$logfile" -w -t 60 start >"$root/pg_ctl.log" 2>&1 {LOCK_FD}>&-; then
    show_log_tail "$root/pg_ctl.log"
    show_log_tail "$logfile"
    die "postgres (replica) did not start"
  fi
  pg_until 30 pg_replica_in_recovery || pg_replica_fail "the replica does not answer as a standby on $(pg_replica_url)"
  # Say, the slot was dropped and the primary recycled WAL the replica needs.
  pg_until 30 pg_replica_streaming \
    || pg_replica_fail "the replica does not stream from the primary (replica-start copies it afresh)"
  log "postgres (replica): up on 127.0.0.1:$PG_REPLICA_PORT, streaming from :$PG_PORT, in $(since "$started") (data $data, log $logfile)"
}

# Drops the replica's slot unless a WAL sender still holds it (fails then); none: done.
pg_primary_drop_slot() {
  [[ "$(pg_primary_sql "SELECT count(*) FROM pg_replication_slots
    WHERE slot_name = '$PG_REPLICA_SLOT' AND active")" == 0 ]] || return 1
  pg_primary_sql "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
    WHERE slot_name = '$PG_REPLICA_SLOT'" >/dev/null
}

# Stop the replica if it runs, then drop its slot (if the primary runs) and its data: a stopped
# replica holds no WAL on the primary.
pg_replica_stop() {
  local root started
  root="$(pg_replica_root)"
  [[ -d "$root" ]] || return 0
  started="$(now_ms)"
  if pg_running "$root" \
    && ! pg_as "$PG_BIN/pg_ctl" -D "$root/data" -m fast -w -t 60 stop >"$root/pg_ctl.log" 2>&1; then
    show_log_tail "$root/pg_ctl.log"
    show_log_tail "$root/postgresql.log"
    log "ERROR: postgres (replica) did not stop"
    return 1   # not die: stop must still go on to the primary and RabbitMQ
  fi
  # The primary's WAL sender lets go of the slot a moment after the replica stops.
  if pg_running && ! pg_until 10 pg_primary_drop_slot; then
    log "postgres (replica): could not drop the slot $PG_REPLICA_SLOT on the primary"
  fi
  rm -rf "$root"
  log "postgres (replica): stopped and removed (slot dropped) in $(since "$started")"
}
