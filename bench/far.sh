#!/usr/bin/env bash
# A far server: segmented downloads when every request waits a round trip before its response
# starts. A relay on loopback (bench/support/delay_relay.py) holds the client-to-server bytes back
# by BENCH_DELAY seconds and passes the response straight on, in front of nginx with a
# per-connection rate limit. Haul asks for a segment a piece at a time (each piece a request on the
# same connection), so this is where those requests cost: haul -x 8 and adaptive against aria2c
# -x 8, alternated, in the same run; every result checked by SHA-256.
#
#   bash bench/far.sh                                         # 256 MiB, 20m a connection, 0.1 s, 2 rounds
#   BENCH_DELAY=0.05 BENCH_SIZE_MB=512 bash bench/far.sh
#
# Environment: BENCH_SIZE_MB (default 256), BENCH_RATE (nginx limit_rate, default 20m),
# BENCH_DELAY (seconds, default 0.1), BENCH_ROUNDS (default 2), BENCH_TMPDIR, BENCH_SCRATCH.
# Only the nginx and the relay this script starts are stopped, by their PIDs.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-256}
rate=${BENCH_RATE:-20m}
delay=${BENCH_DELAY:-0.1}
rounds=${BENCH_ROUNDS:-2}
scratch=${BENCH_SCRATCH:-.build}
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light aria2 coreutils python3

bench_workdir far
relay=""
bench_cleanup_more() {
    if [[ -n "$relay" ]] && kill -0 "$relay" 2>/dev/null; then kill -TERM "$relay" 2>/dev/null || true; fi
}
mkdir -p "$work/root" "$work/out" "$work/nginx"
build_haul_release "$scratch" "$work/build.log" || exit 1

log "making a ${size_mb} MiB file"
head -c "$((size_mb * 1048576))" /dev/urandom >"$work/root/file.bin"
want=$(sha256sum "$work/root/file.bin" | cut -d' ' -f1)
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" NGINX_HTTP_EXTRA="access_log off; limit_rate $rate;" nginx_start

# The relay's port: a free one, asked of the kernel.
relay_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 bench/support/delay_relay.py "$relay_port" "$nginx_port" "$delay" &
relay=$!
for _ in $(seq 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$relay_port") 2>/dev/null; then break; fi
    sleep 0.1
done
url="http://127.0.0.1:$relay_port/file.bin"
log "nginx on $nginx_port (limit_rate $rate), relay on $relay_port (requests held ${delay} s)"

out="$work/out/file.bin"
run_tool() {
    case $1 in
        haul-x8) "$haul_bin" -q -x 8 -o "$out" "$url" ;;
        haul-adaptive) "$haul_bin" -q -o "$out" "$url" ;;
        aria2-x8) aria2c -q -x 8 -s 8 --file-allocation=none --allow-overwrite=true -d "$work/out" -o file.bin "$url" ;;
    esac
}

tools=(haul-x8 haul-adaptive aria2-x8)
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
echo "${size_mb} MiB, limit_rate $rate per connection, requests held ${delay} s, $rounds round(s), medians:"
aria=$(printf '%s' "${walls[aria2-x8]}" | median)
for tool in "${tools[@]}"; do
    med=$(printf '%s' "${walls[$tool]}" | median)
    printf '%-14s wall %6.2f s   aria2 -x 8 wall / this: %.2fx\n' "$tool" "$med" "$(awk -v a="$aria" -v m="$med" 'BEGIN { print a / m }')"
done
