#!/usr/bin/env bash
# The most threads haul has at once: one large file over 16 connections (`-x 16`), the same under
# `--limit-rate`, one connection under `--limit-rate`, and the adaptive default, from nginx on
# loopback. Each run's /proc/PID/status is sampled every 10 ms. (Thread names are not listed: on
# Linux, Foundation's Thread.name does not reach /proc/PID/task/*/comm; use gdb for an inventory.)
#
#   bash bench/threads.sh                        # 1 GiB file
#   BENCH_SIZE_MB=256 bash bench/threads.sh      # quick check
#
# Environment:
#   BENCH_SIZE_MB   size of the served file in MiB (default 1024)
#   BENCH_LIMIT     the --limit-rate of the limited runs (default 200M)
#   BENCH_HAUL      a haul binary to measure instead of building one
#   BENCH_TMPDIR    where the served file and downloads go (default $TMPDIR or /var/tmp)
#   BENCH_SCRATCH   swift build scratch path for the release build of haul (default .build)
#
# Only the nginx this script starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-1024}
limit=${BENCH_LIMIT:-200M}
scratch=${BENCH_SCRATCH:-.build}
if ! [[ "$size_mb" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: BENCH_SIZE_MB must be a positive integer" >&2
    exit 2
fi

source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light coreutils

bench_workdir threads
mkdir -p "$work/root" "$work/out" "$work/nginx"

if [[ -n "${BENCH_HAUL:-}" ]]; then
    haul_bin=$BENCH_HAUL
else
    build_haul_release "$scratch" "$work/haul-build.log" || exit 1
fi

log "writing a ${size_mb} MiB file under $work"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom >"$work/root/file.bin"
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" NGINX_HTTP_EXTRA="access_log off;" nginx_start
url="http://127.0.0.1:$nginx_port/file.bin"
log "nginx PID $nginx_pid: $url"

# Runs haul with the given arguments; prints its wall time and the most threads seen.
measure() { # label args...
    local label=$1
    shift
    rm -f "$work/out/file.bin"
    local started=$SECONDS
    "$haul_bin" -q -o "$work/out/file.bin" "$@" "$url" </dev/null >"$work/haul.log" 2>&1 &
    local pid=$! most=0 now
    while kill -0 "$pid" 2>/dev/null; do
        now=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        if [[ -n "$now" ]] && ((now > most)); then most=$now; fi
        sleep 0.01
    done
    local status=0
    wait "$pid" || status=$?
    if ((status != 0)); then
        echo "error: haul $* exited with $status:" >&2
        cat "$work/haul.log" >&2
        return 1
    fi
    printf '%-28s wall %4ss  threads max %3s\n' "$label" "$((SECONDS - started))" "$most"
}

measure "-x 16" -x 16
measure "-x 16 --limit-rate $limit" -x 16 --limit-rate "$limit"
measure "-x 1 --limit-rate $limit" -x 1 --limit-rate "$limit"
measure "adaptive"
