#!/usr/bin/env bash
# Fleet benchmark: one queue on PostgreSQL drained by 1, 2 and 4 `haul queue run` workers, the
# claim's latency at the database, and the cost per item against the SQLite store.
#
#   bash bench/fleet.sh                                   # 2,000 files of 16 KiB, -j 4 per worker
#   BENCH_FILES=200 BENCH_ROUNDS=1 bash bench/fleet.sh    # quick check of the script
#
# Environment:
#   BENCH_FILES     files in the queue (default 2000)
#   BENCH_FILE_KB   size of each file in KiB (default 16)
#   BENCH_JOBS      -j of each worker (default 4)
#   BENCH_ROUNDS    rounds per row (default 3); the table shows medians
#   BENCH_TMPDIR    where the files, the downloads and the cluster go (default $TMPDIR or /var/tmp)
#   BENCH_HAUL      a haul binary to use instead of building one with `swift build -c release --static-swift-stdlib`
#
# A private PostgreSQL cluster (initdb into the work directory, as the postgres user when run as
# root, a free loopback port, fsync off like the tests') and a private nginx; each round gets a
# fresh database (or --state directory) and output directory. Rows: workers on PostgreSQL, and one
# worker on SQLite. Columns: wall time, items/s, CPU per item of the haul processes and of the
# PostgreSQL server (its postmaster's children, as the kernel counts them when they exit). Claim
# latency: pgbench runs the claim statement haul runs (`FOR UPDATE SKIP LOCKED`, one item per
# transaction, settled at once) on a table of queued rows, with 1 and 4 clients. Only the nginx
# and the PostgreSQL this script started are stopped, by their PIDs.
set -euo pipefail
cd "$(dirname "$0")/.."

files=${BENCH_FILES:-2000}
file_kb=${BENCH_FILE_KB:-16}
jobs=${BENCH_JOBS:-4}
rounds=${BENCH_ROUNDS:-3}

source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light postgresql libpq-dev time coreutils

pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pg_pid=""
bench_cleanup_more() {
    if [[ -n "$pg_pid" ]] && kill -0 "$pg_pid" 2>/dev/null; then
        kill -INT "$pg_pid"
        for _ in $(seq 100); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.1; done
    fi
}
bench_workdir fleet
mkdir -p "$work/root" "$work/nginx" "$work/pg"

as_postgres() { if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }
if ((EUID == 0)); then chown postgres "$work/pg"; chmod 755 "$work"; fi
pg_port=$(nginx_free_port)
log "PostgreSQL: $pg_bin on 127.0.0.1:$pg_port"
as_postgres "$pg_bin/initdb" -D "$work/pg/data" -U haul --auth=trust -E UTF8 --no-sync --no-instructions >/dev/null
as_postgres "$pg_bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w \
    -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" \
    start >/dev/null
pg_pid=$(head -n 1 "$work/pg/data/postmaster.pid")
psql() { "$pg_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 -d "postgresql://haul@127.0.0.1:$pg_port/${2:-postgres}" -c "$1"; }

psql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
# Statements the server ran in database $1 since the last reset, as pg_stat_statements counts
# them (BEGIN and COMMIT included); reset with `psql "SELECT pg_stat_statements_reset()"`.
statements_in() { psql "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '$1'"; }

if [[ -n "${BENCH_HAUL:-}" ]]; then
    haul_bin=$BENCH_HAUL
else
    build_haul_release .build "$work/build.log"
fi

log "writing $files files of $file_kb KiB"
head -c "$((files * file_kb * 1024))" /dev/urandom | split -b "$((file_kb * 1024))" -d -a 6 --additional-suffix=.bin - "$work/root/f"
NGINX_DIR=$work/nginx NGINX_ROOT=$work/root NGINX_HTTP_EXTRA="access_log off;" nginx_start
urls=()
for path in "$work/root"/f*.bin; do urls+=("http://127.0.0.1:$nginx_port/$(basename "$path")"); done

# The server's CPU so far, in clock ticks: the postmaster's own and that of its exited children.
server_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pg_pid/stat"; }
ticks_per_second=$(getconf CLK_TCK)

# run_round STATE WORKERS OUT [DB]: adds every URL to STATE, runs WORKERS workers at once, prints
# "wall haul_cpu server_cpu statements" (seconds; statements the run sent to DB, 0 without one).
run_round() {
    local state=$1 workers=$2 out=$3 db=${4:-}
    # A fresh directory each round, nothing deleted: files created within about 30 s of a mass
    # deletion cost up to 10x on ext4 (bench/README.md).
    mkdir -p "$out"
    for ((start = 0; start < files; start += 500)); do
        "$haul_bin" queue add --state "$state" -d "$out" "${urls[@]:start:500}" >/dev/null
    done
    local before after t0 t1 pids=() cpu=0
    if [[ -n "$db" ]]; then psql "SELECT pg_stat_statements_reset()" >/dev/null; fi
    before=$(server_ticks)
    t0=$(date +%s.%N)
    for ((w = 0; w < workers; w++)); do
        /usr/bin/time -f "%U %S" -o "$work/time.$w" "$haul_bin" queue run --state "$state" -j "$jobs" -q &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    t1=$(date +%s.%N)
    # The backends of the workers' connections exit when the workers do; their CPU reaches the
    # postmaster's count once it has reaped them.
    sleep 0.5
    after=$(server_ticks)
    for ((w = 0; w < workers; w++)); do cpu=$(awk -v c="$cpu" '{ print c + $1 + $2 }' "$work/time.$w"); done
    local got statements=0
    if [[ -n "$db" ]]; then
        statements=$(statements_in "$db")
        # What the statements were, per item, for the table after the runs.
        psql "SELECT round(sum(calls)::numeric / $files, 2) || ' | ' || regexp_replace(left(query, 90), '\s+', ' ', 'g')
              FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '$db'
              GROUP BY query ORDER BY sum(calls) DESC LIMIT 14" >"$work/top.$db"
    fi
    got=$(find "$out" -name 'f*.bin' | wc -l)
    if ((got != files)); then echo "error: $got of $files files downloaded" >&2; exit 1; fi
    cmp -s "$out/f000000.bin" "$work/root/f000000.bin" || { echo "error: f000000.bin differs" >&2; exit 1; }
    awk -v a="$t0" -v b="$t1" -v c="$cpu" -v s="$(((after - before)))" -v hz="$ticks_per_second" -v q="$statements" \
        'BEGIN { printf "%.3f %.3f %.3f %d\n", b - a, c, s / hz, q }'
}

report() {
    local label=$1 results=$2
    local wall cpu server statements
    wall=$(cut -d' ' -f1 <"$results" | median)
    statements=$(cut -d' ' -f4 <"$results" | median)
    cpu=$(cut -d' ' -f2 <"$results" | median)
    server=$(cut -d' ' -f3 <"$results" | median)
    awk -v l="$label" -v w="$wall" -v c="$cpu" -v s="$server" -v n="$files" -v q="$statements" \
        'BEGIN { printf "| %-22s | %7.2f | %8.0f | %16.0f | %18.0f | %19.1f |\n", l, w, n / w, c / n * 1e6, s / n * 1e6, q / n }'
}

echo
echo "| store, workers x -j     | wall, s | items/s | haul CPU µs/item | server CPU µs/item | statements per item |"
echo "|------------------------|---------|---------|------------------|--------------------|---------------------|"
: >"$work/sqlite.results"
for ((r = 1; r <= rounds; r++)); do
    rm -rf "$work/state"
    run_round "$work/state" 1 "$work/out/sqlite.$r" >>"$work/sqlite.results"
done
report "SQLite, 1 x $jobs" "$work/sqlite.results"
for workers in 1 2 4; do
    : >"$work/pg.$workers.results"
    for ((r = 1; r <= rounds; r++)); do
        db="fleet_${workers}_$r"
        psql "CREATE DATABASE $db" >/dev/null
        run_round "postgresql://haul@127.0.0.1:$pg_port/$db" "$workers" "$work/out/pg.$workers.$r" "$db" >>"$work/pg.$workers.results"
    done
    report "PostgreSQL, $workers x $jobs" "$work/pg.$workers.results"
done

echo
echo "Statements per item, one worker (pg_stat_statements, the first round):"
echo
echo "| per item | statement |"
echo "|----------|-----------|"
sed 's/^/| /; s/$/ |/' "$work/top.fleet_1_1"

# ---- claim latency at the database --------------------------------------------------------------
psql "CREATE DATABASE claims" >/dev/null
"$haul_bin" queue list --state "postgresql://haul@127.0.0.1:$pg_port/claims" >/dev/null
psql "INSERT INTO downloads (url, method, headers, destination_kind, destination, existing_policy, state, host, created_at, updated_at)
      SELECT 'http://h/' || g, 'GET', '[]', 'file', '/x/' || g, 'refuse', 'queued', 'h', 0, 0 FROM generate_series(1, 200000) g" claims
cat >"$work/claim.sql" <<'SQL'
WITH candidate AS (SELECT d.id FROM downloads d WHERE d.state = 'queued' AND (d.not_before IS NULL OR d.not_before <= now())
    ORDER BY d.priority DESC, d.id LIMIT 1 FOR UPDATE OF d SKIP LOCKED)
UPDATE downloads SET state = 'completed', lease_owner = 'bench', lease_expires = now() + interval '20 seconds',
    lease_epoch = lease_epoch + 1, attempts = attempts + 1 FROM candidate WHERE downloads.id = candidate.id RETURNING downloads.*;
SQL
echo
echo "| pgbench clients | claims/s | claim latency, ms |"
echo "|-----------------|----------|-------------------|"
for clients in 1 4; do
    line=$("$pg_bin/pgbench" -n -c "$clients" -j "$clients" -T 5 -f "$work/claim.sql" "postgresql://haul@127.0.0.1:$pg_port/claims" 2>/dev/null)
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$line")
    latency=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$line")
    printf '| %15s | %8.0f | %17s |\n' "$clients" "$tps" "$latency"
done
