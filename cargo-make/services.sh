#!/usr/bin/env bash
# Local PostgreSQL + RabbitMQ for development, tests and CI.
#
#   cargo-make/services.sh start    start both (idempotent); cargo-make/ensure-deps.sh installs
#                                   them with apt-get if missing
#   cargo-make/services.sh stop     stop Tasker processes (<state>/run/*.pid), PostgreSQL and RabbitMQ
#                                   (and the cluster of cluster-start, if any of it is up)
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
#   cargo-make/services.sh orchestrator-user PREFIX NAME  the orchestrators' own broker user (not
#                                   `guest`): it may declare, read and write PREFIX's objects only
#                                   and publish through the default exchange; no administrator tag.
#                                   Prints `NAME URL` (a new password each time)
#   cargo-make/services.sh tls-start  also start a PostgreSQL that takes TLS connections only,
#                                   and print `export` lines for it, the amqps:// URL and the CA
#                                   (tests/fast/tls.rs, docs/tls.md)
#   cargo-make/services.sh replica-start  a streaming replica (hot standby) of the local
#                                   PostgreSQL, which must be up (idempotent; `start` never starts
#                                   it): copied once with pg_basebackup, fed through the slot
#                                   tasker_replica; prints its `export` line (replica-env). Adds a
#                                   `host replication` line to the primary's pg_hba.conf and reloads
#                                   it, never restarts it
#   cargo-make/services.sh replica-env   print `export TASKER_LOCAL_REPLICA_DATABASE_URL=...`
#                                   (exit 1 if the replica is not running)
#   cargo-make/services.sh replica-stop  stop the replica (`stop` does too) and remove it, its slot
#                                   and data (no WAL piles up on the primary); replica-start copies
#                                   it afresh
#   cargo-make/services.sh cluster-start  a 3-node RabbitMQ cluster beside the single node, for
#                                   quorum queues (idempotent; `start` never starts it): nodes
#                                   tasker1..3@localhost; prints its `export` line (cluster-env)
#   cargo-make/services.sh cluster-env   print `export TASKER_CLUSTER_AMQP_URL="amqp://...,..."`,
#                                   the three nodes' URLs comma-separated (Tasker's list of nodes)
#   cargo-make/services.sh cluster-stop  stop the cluster's nodes and its epmd (`stop` does too);
#                                   keeps their data, so cluster-start brings the same cluster back
#   cargo-make/services.sh cluster-kill N  SIGKILL node N (1..3); prints its pid
#   cargo-make/services.sh cluster-node-start N  start node N again; returns once it is running
#                                   and back in the cluster
#   cargo-make/services.sh cluster-leader QUEUE  print the node that leads quorum queue QUEUE
#   cargo-make/services.sh cluster-ctl N ARGS  rabbitmqctl against node N
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
#   TASKER_PG_REPLICA_PORT port of the streaming replica of `replica-start` (default 55434)
#   TASKER_CLUSTER_AMQP_PORT  the cluster's first AMQP port; node N takes this + N - 1
#                             (default 55681: 55681..55683)
#   TASKER_CLUSTER_DIST_PORT  the same for its Erlang distribution ports (default 55691..55693)
#   TASKER_CLUSTER_EPMD_PORT  the cluster's own epmd (default 55694)
#   DATABASE_URL / AMQP_URL  if already set (to anything but the URL this script hands out), that
#                            service is external: never started or stopped here.
set -euo pipefail
# shellcheck source=cargo-make/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
LOG_PREFIX="[services]"

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
PG_REPLICA_PORT="${TASKER_PG_REPLICA_PORT:-55434}"
# The 3-node cluster of `cluster-start`: node N takes base + N - 1 of the first two. Its own epmd
# again, distinct from EPMD_PORT, so that `cluster-stop` can kill it without touching the single
# node's.
CLUSTER_AMQP_PORT="${TASKER_CLUSTER_AMQP_PORT:-55681}"
CLUSTER_DIST_PORT="${TASKER_CLUSTER_DIST_PORT:-55691}"
CLUSTER_EPMD_PORT="${TASKER_CLUSTER_EPMD_PORT:-55694}"

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

# What each service is and does lives in cargo-make/lib/, one file each; this script holds the
# commands. Packages: cargo-make/ensure-deps.sh installs what is missing (see cmd_start), from the
# one list cargo-make/dependencies.txt (group "services").
LIB="$ROOT/cargo-make/lib"
# shellcheck source=cargo-make/lib/processes.sh
source "$LIB/processes.sh"
# shellcheck source=cargo-make/lib/ports.sh
source "$LIB/ports.sh"
# shellcheck source=cargo-make/lib/tls.sh
source "$LIB/tls.sh"
# shellcheck source=cargo-make/lib/postgres.sh
source "$LIB/postgres.sh"
# shellcheck source=cargo-make/lib/postgres_replica.sh
source "$LIB/postgres_replica.sh"
# shellcheck source=cargo-make/lib/rabbitmq.sh
source "$LIB/rabbitmq.sh"
# shellcheck source=cargo-make/lib/rabbitmq_cluster.sh
source "$LIB/rabbitmq_cluster.sh"

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
take_services_lock() {
  take_lock "$RUN_DIR/services.lock" 300 "another services.sh start/stop has held $RUN_DIR/services.lock for 5 minutes"
}

cmd_start() {
  take_services_lock
  local started
  started="$(now_ms)"
  local ports=() deps=()
  [[ -n "$EXTERNAL_PG" ]] || { ports+=("$PG_PORT"); deps+=(services:postgresql); }
  [[ -n "$EXTERNAL_AMQP" ]] || { ports+=("$AMQP_PORT" "$AMQPS_PORT" "$AMQP_DIST_PORT" "$EPMD_PORT"); deps+=(services:rabbitmq-server services:openssl); }
  # What is missing gets installed (dpkg-query decides; apt-get when needed, services kept from
  # starting). {LOCK_FD}>&- : nothing apt starts may inherit our lock.
  if ((${#deps[@]})) && ! "$ROOT/cargo-make/ensure-deps.sh" "${deps[@]}" {LOCK_FD}>&-; then
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
  take_services_lock
  [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; tls-start needs the local one (its amqps:// listener)"
  rmq_running || die "the local RabbitMQ is not running; start it first: $0 start"
  port_open "$AMQPS_PORT" \
    || die "the local RabbitMQ takes no amqps:// on $AMQPS_PORT: it was started by an older services.sh; restart it: $0 stop && $0 start"
  "$ROOT/cargo-make/ensure-deps.sh" services:postgresql services:openssl {LOCK_FD}>&- \
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

# The streaming replica of the local PostgreSQL (cargo-make/lib/postgres_replica.sh), then its
# `export` line (TASKER_LOCAL_REPLICA_DATABASE_URL: not a configuration key either).
cmd_replica_start() {
  take_services_lock
  [[ -z "$EXTERNAL_PG" ]] || die "DATABASE_URL points at an external server; replica-start replicates the local one"
  pg_running || die "the local PostgreSQL is not running; start it first: $0 start"
  reserve_ports "$PG_REPLICA_PORT"
  pg_replica_start
  cmd_replica_env
}

cmd_replica_env() {
  pg_running "$(pg_replica_root)" || die "the replica is not running; start it with: $0 replica-start"
  printf 'export TASKER_LOCAL_REPLICA_DATABASE_URL=%q\n' "$(pg_replica_url)"
}

cmd_stop() {
  take_services_lock
  # Clients first, so the servers don't wait for their connections to go away.
  stop_tasker_processes
  local rc=0
  # The replica before its primary (whatever DATABASE_URL says: it is always ours).
  pg_replica_stop || rc=1
  if [[ -n "$EXTERNAL_PG" ]]; then log "postgres: external (DATABASE_URL set); left alone"; else pg_stop || rc=1; fi
  pg_stop "$(pg_tls_root)" || rc=1
  if [[ -n "$EXTERNAL_AMQP" ]]; then log "rabbitmq: external (AMQP_URL set); left alone"; else rmq_stop || rc=1; fi
  # The cluster of cluster-start, if any of it is up (whatever AMQP_URL says: it is always ours).
  # Not with ports that clash with the single node's (rmqc_check_ports says why, in a subshell
  # so that the rest of stop goes on): its epmd -kill could reach the wrong epmd.
  if (rmqc_check_ports) && rmqc_any_up; then rmqc_stop || rc=1; fi
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
  # The replica only once replica-start made it; it is never required.
  if pg_running "$(pg_replica_root)"; then
    printf '%-10s up    %s  (streaming replica, replica-start)\n' "postgres:" "$(pg_replica_url)"
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
  # The cluster of cluster-start only when some of it is up; it is never required.
  if rmqc_any_up; then rmqc_status; fi
  status_tasker_processes
  return "$rc"
}

# A broker user per worker role (rmq_worker_users), on the local broker only.
cmd_worker_users() {
  local prefix="${1:?usage: $0 worker-users PREFIX NAME=NAMESPACES...}"
  shift
  (($# > 0)) || die "usage: $0 worker-users PREFIX NAME=NAMESPACES..."
  [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; create its users there (docs/auth.md)"
  rmq_running || die "the local RabbitMQ is not running; start it with: $0 start"
  rmq_worker_users "$prefix" "$@"
}

# The orchestrators' own broker user (rmq_orchestrator_user), on the local broker only.
cmd_orchestrator_user() {
  local usage="usage: $0 orchestrator-user PREFIX NAME"
  (($# == 2)) || die "$usage"
  [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; create its users there (docs/auth.md)"
  rmq_running || die "the local RabbitMQ is not running; start it with: $0 start"
  rmq_orchestrator_user "$1" "$2"
}

# The 3-node cluster (cargo-make/lib/rabbitmq_cluster.sh): start, then its `export` line.
cmd_cluster_start() {
  rmqc_check_ports
  take_services_lock
  "$ROOT/cargo-make/ensure-deps.sh" services:rabbitmq-server {LOCK_FD}>&- \
    || die "could not install what the RabbitMQ cluster needs (see above)"
  local ports=("$CLUSTER_EPMD_PORT") n
  for n in $(rmqc_nodes); do ports+=("$(rmqc_amqp_port "$n")" "$(rmqc_dist_port "$n")"); done
  reserve_ports "${ports[@]}"
  rmqc_start
  cmd_cluster_env
}

cmd_cluster_env() {
  # Double quotes, not %q: the URLs are ours (numeric ports, checked) and read better so.
  printf 'export TASKER_CLUSTER_AMQP_URL="%s"\n' "$(rmqc_urls)"
}

cmd_cluster_node_start() {
  rmqc_check_n "${1:-}" "usage: $0 cluster-node-start N (1..$RMQC_SIZE)"
  rmqc_check_ports
  take_services_lock
  rmqc_node_start "$1"
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
  replica-start) cmd_replica_start ;;
  replica-env) cmd_replica_env ;;
  replica-stop) take_services_lock && pg_replica_stop ;;
  # Only the Tasker processes (demo.sh restarts its orchestrator/worker this way); services stay up.
  stop-procs) take_services_lock && stop_tasker_processes ;;
  # Restart the local PostgreSQL in place (every connection drops), for the fault suite.
  pg-restart)
    [[ -z "$EXTERNAL_PG" ]] || die "DATABASE_URL points at an external server; pg-restart only drives the local one"
    pg_running || die "the local PostgreSQL is not running; start it with: $0 start"
    pg_restart
    ;;
  worker-users) shift && cmd_worker_users "$@" ;;
  orchestrator-user) shift && cmd_orchestrator_user "$@" ;;
  # rabbitmqctl against our own broker, e.g. `rabbitmqctl stop_app` in the broker-restart test.
  rabbitmqctl)
    shift
    [[ -z "$EXTERNAL_AMQP" ]] || die "AMQP_URL points at an external broker; rabbitmqctl only drives the local one"
    # The node, not the AMQP port: after `stop_app` the port is closed but the node still runs.
    pid_alive "$(rmq_pid || true)" || die "the local RabbitMQ node is not running; start it with: $0 start"
    exec env "${RMQ_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$RMQ_NODE" "$@"
    ;;
  cluster-start) cmd_cluster_start ;;
  cluster-env) rmqc_check_ports && cmd_cluster_env ;;
  cluster-stop) rmqc_check_ports && take_services_lock && rmqc_stop ;;
  # A crash, not a shutdown: the pid of the killed beam.smp on standard output. Without the lock:
  # a crash does not wait for a start to finish (a node still booting is found all the same).
  cluster-kill)
    rmqc_check_n "${2:-}" "usage: $0 cluster-kill N (1..$RMQC_SIZE)"
    rmqc_kill "$2"
    ;;
  cluster-node-start) shift && cmd_cluster_node_start "$@" ;;
  cluster-leader)
    [[ -n "${2:-}" ]] || die "usage: $0 cluster-leader QUEUE"
    rmqc_leader "$2"
    ;;
  # rabbitmqctl against node N of the cluster, e.g. `cluster-ctl 2 list_queues name leader`.
  cluster-ctl)
    rmqc_check_n "${2:-}" "usage: $0 cluster-ctl N ARGS... (N: 1..$RMQC_SIZE)"
    n="$2"
    shift 2
    rmqc_alive "$n" || die "cluster node $(rmqc_node "$n") is not running; start it with: $0 cluster-start"
    rmqc_env "$n"
    exec env "${RMQC_ENV[@]}" "$RMQ_BIN/rabbitmqctl" -q -n "$(rmqc_node "$n")" "$@"
    ;;
  *)
    echo "usage: $0 start|stop|status|env|tls-start|replica-start|replica-env|replica-stop|stop-procs|pg-restart|worker-users PREFIX NAME=NS...|orchestrator-user PREFIX NAME|rabbitmqctl ARGS...|cluster-start|cluster-env|cluster-stop|cluster-kill N|cluster-node-start N|cluster-leader QUEUE|cluster-ctl N ARGS..." >&2
    exit 2
    ;;
esac
