#!/usr/bin/env bash
# PostgreSQL's notify lock against commit throughput (docs/benchmarks/notify.md): a scratch
# cluster of its own (port 56999, in a temporary folder; the project's services untouched), a
# transaction shaped like a result batch's (transaction.sql: an UPDATE of 64 rows, three history
# INSERTs) with no pg_notify, one, or sixteen, under pgbench at 1 to 16 clients, synchronous_commit on and off.
# Prints the median tps of NOTIFY_RUNS (3) runs of NOTIFY_SECONDS (10) each per cell. Needs
# PostgreSQL 15's server binaries (run as the postgres user when root).
set -euo pipefail
seconds="${NOTIFY_SECONDS:-10}"
runs="${NOTIFY_RUNS:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1)")"
dir="$(mktemp -d /tmp/tasker-notify.XXXXXX)"
chmod 755 "$dir"
as_pg() { if [[ $EUID -eq 0 ]]; then chown -R postgres "$dir"; runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w \
  -o "-p 56999 -k $dir -c shared_buffers=512MB -c max_wal_size=4GB" start >/dev/null
trap 'as_pg "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null; rm -rf "$dir"' EXIT
export PGHOST="$dir" PGPORT=56999 PGUSER=postgres PGDATABASE=postgres
"$bin/psql" -qX -c "CREATE TABLE t (id int PRIMARY KEY, v int, state text, updated_at timestamptz)
                      WITH (fillfactor = 70);
                    INSERT INTO t SELECT g, 0, 'new', now() FROM generate_series(1, 100000) g;
                    CREATE TABLE hist (id bigserial, task_id int, kind text, at timestamptz DEFAULT now());"
printf '| synchronous_commit | clients | no notify | 1 notify | 16 notifies |\n|---|---:|---:|---:|---:|\n'
for mode in on off; do
  for c in 1 2 4 8 16; do
    row="| $mode | $c |"
    for n in 0 1 16; do
      tps=()
      for _ in $(seq "$runs"); do
        tps+=("$(PGOPTIONS="-c synchronous_commit=$mode" "$bin/pgbench" -n -M prepared -c "$c" -j "$c" \
          -T "$seconds" -D notifies="$n" -f "$here/transaction.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')")
      done
      row+=" $(printf '%s\n' "${tps[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p" | xargs printf '%.0f') |"
    done
    echo "$row"
  done
done
