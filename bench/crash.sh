#!/usr/bin/env bash
# Crash waste: how many bytes beyond the file the server sends when a download is killed with
# SIGKILL several times at random moments and then run to its end (the bytes a kill throws away).
# Haul (default options, -x 1, -x 8) and curl -C - in the same run, from nginx on loopback with a
# per-connection rate limit; nginx's own $bytes_sent is the measure. Every result is checked
# bit-exact by SHA-256. Also a kill trial: no run after a kill may fail.
#
#   bash bench/crash.sh                                           # 1 GiB at 100m per connection, 6 kills
#   BENCH_SIZE_MB=256 BENCH_KILLS=4 bash bench/crash.sh           # quick check
#
# Environment: BENCH_SIZE_MB (default 1024), BENCH_KILLS (default 6), BENCH_RATE (nginx limit_rate,
# default 100m), BENCH_TMPDIR, BENCH_SCRATCH (swift build scratch path, default .build).
# Only the nginx this script starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-1024}
kills=${BENCH_KILLS:-6}
rate=${BENCH_RATE:-100m}
scratch=${BENCH_SCRATCH:-.build}
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light curl coreutils

bench_workdir crash
child=""
bench_cleanup_more() {
    if [[ -n "$child" ]] && kill -0 "$child" 2>/dev/null; then kill -KILL "$child" 2>/dev/null || true; fi
}
mkdir -p "$work/root" "$work/out" "$work/nginx"

build_haul_release "$scratch" "$work/build.log" || exit 1

log "making a ${size_mb} MiB file"
head -c "$((size_mb * 1048576))" /dev/urandom >"$work/root/file.bin"
want=$(sha256sum "$work/root/file.bin" | cut -d' ' -f1)
file_bytes=$((size_mb * 1048576))

NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" \
NGINX_HTTP_EXTRA="log_format sent '\$bytes_sent \$status'; access_log \"$work/nginx/sent.log\" sent; limit_rate $rate;" \
    nginx_start
url="http://127.0.0.1:$nginx_port/file.bin"
log "nginx on port $nginx_port, limit_rate $rate per connection"

# Bytes nginx has sent so far (headers included), summed over its log.
sent_total() { awk '{ s += $1 } END { printf "%.0f\n", s }' "$work/nginx/sent.log" 2>/dev/null || echo 0; }

# One trial: the command is run and killed $kills times at random moments, then run to the end.
trial() {
    local name=$1; shift
    local out="$work/out/$name.bin" before after failures=0 i status
    rm -f "$out" "$out".haul-*
    before=$(sent_total)
    for ((i = 1; i <= kills; i++)); do
        "$@" "$out" "$url" >/dev/null 2>"$work/$name.err" &
        child=$!
        # A random moment between 0.3 and 1.3 s into the run.
        sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.3 + (r % 100) / 100 }')"
        kill -KILL "$child" 2>/dev/null || true
        status=0
        wait "$child" 2>/dev/null || status=$?
        child=""
        sleep 1 # let nginx notice the closed connections and log them
        # A run that ended by itself before the kill must have succeeded; then the file is done.
        if ((status == 0)); then
            break
        elif ((status != 137)); then
            failures=$((failures + 1))
            echo "   run $i of $name exited $status: $(tail -n 2 "$work/$name.err")" >&2
        fi
    done
    status=0
    if ((i > kills)); then
        "$@" "$out" "$url" >/dev/null 2>"$work/$name.err" || status=$?
    fi
    sleep 1
    after=$(sent_total)
    local got
    got=$(sha256sum "$out" 2>/dev/null | cut -d' ' -f1 || true)
    local extra=$((after - before - file_bytes))
    local killed=$((i > kills ? kills : i - 1))
    printf '%-14s final exit %s, %s, kills %d, failed runs %d, extra bytes sent %d (%s MiB per kill)\n' \
        "$name" "$status" "$([[ "$got" == "$want" ]] && echo bit-exact || echo CORRUPT)" "$killed" "$failures" \
        "$extra" "$(awk -v e="$extra" -v k="$killed" 'BEGIN { if (k > 0) printf "%.2f", e / k / 1048576; else print "-" }')"
}

trial haul-default "$haul_bin" -q -o
trial haul-x1 "$haul_bin" -q -x 1 -o
trial haul-x8 "$haul_bin" -q -x 8 -o
trial curl curl -sS -f -C - -o
