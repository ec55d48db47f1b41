#!/usr/bin/env bash
# HTTP/2 vs HTTP/1.1: haul from nginx over TLS on loopback (`listen ... ssl http2`, a throwaway CA),
# `--http2` (HTTP/2 where ALPN negotiates it) against the default (HTTP/1.1), with one connection and
# with eight, on a file capped per request (limit_rate) and on an unlimited one; curl for reference.
#
#   bash bench/http2.sh                                              # 512 MiB capped, 1 GiB unlimited, 1 round
#   BENCH_SIZE_MB=64 BENCH_UNTHROTTLED_MB=128 bash bench/http2.sh    # quick check
#
# Environment:
#   BENCH_SIZE_MB         size of the capped file in MiB (default 512)
#   BENCH_UNTHROTTLED_MB  size of the unlimited file in MiB (default 1024)
#   BENCH_ROUNDS          rounds per row (default 1); the table shows medians
#   BENCH_RATE            nginx limit_rate per request for /limited/ (default 20m)
#   BENCH_TMPDIR          where the served files and downloads go (default $TMPDIR or /var/tmp)
#   BENCH_SCRATCH         swift build scratch path for the release build of haul (default .build)
#
# The protocol of every request is counted from nginx's own log ($server_protocol), so the table
# shows what was really spoken. Each row's first output is checked against the source's SHA-256.
# Only the nginx this script starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-512}
unthrottled_mb=${BENCH_UNTHROTTLED_MB:-1024}
rounds=${BENCH_ROUNDS:-1}
rate=${BENCH_RATE:-20m}
scratch=${BENCH_SCRATCH:-.build}

source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light curl openssl time coreutils

bench_workdir h2
mkdir -p "$work/root" "$work/nginx" "$work/runs"

echo "==> writing ${size_mb} MiB and ${unthrottled_mb} MiB files, a throwaway CA"
head -c "$((size_mb << 20))" /dev/urandom >"$work/root/capped.bin"
head -c "$((unthrottled_mb << 20))" /dev/urandom >"$work/root/free.bin"
declare -A sha=([capped]=$(sha256sum "$work/root/capped.bin" | cut -d' ' -f1) [free]=$(sha256sum "$work/root/free.bin" | cut -d' ' -f1))
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1

# scripts/nginx.sh writes a plain-HTTP server; this one listens with TLS and HTTP/2 and logs the protocol.
port=$(nginx_free_port)
user_line=""
if ((EUID == 0)); then user_line="user root;"; fi
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
$user_line
pid "$work/nginx/nginx.pid";
error_log "$work/nginx/error.log" notice;
events { worker_connections 1024; }
http {
    default_type application/octet-stream;
    client_body_temp_path "$work/nginx/client_body";
    proxy_temp_path "$work/nginx/proxy";
    fastcgi_temp_path "$work/nginx/fastcgi";
    log_format proto '\$server_protocol \$status';
    access_log "$work/nginx/access.log" proto;
    sendfile on;
    server {
        listen 127.0.0.1:$port ssl http2;
        ssl_certificate "$work/cert.pem";
        ssl_certificate_key "$work/key.pem";
        root "$work/root";
        location / { }
        location /limited/ { limit_rate $rate; alias "$work/root/"; }
    }
}
CONF
"$nginx_bin" -p "$work/nginx/" -c "$work/nginx/nginx.conf" </dev/null >"$work/nginx/stderr.log" 2>&1 &
nginx_pid=$!
for _ in $(seq 100); do
    [[ "$(cat "$work/nginx/nginx.pid" 2>/dev/null)" == "$nginx_pid" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
base="https://127.0.0.1:$port"
echo "==> nginx PID $nginx_pid on $base (TLS, HTTP/2 offered)"

build_haul_release "$scratch" "$work/build.log"

# name | url path | file key | command words (OUT and URL appended)
rows=(
    "haul h2 x8 capped|/limited/capped.bin|capped|$haul_bin -q --cacert $work/cert.pem -x 8 --http2"
    "haul h1.1 x8 capped|/limited/capped.bin|capped|$haul_bin -q --cacert $work/cert.pem -x 8"
    "haul h2 adaptive capped|/limited/capped.bin|capped|$haul_bin -q --cacert $work/cert.pem --http2"
    "haul h1.1 adaptive capped|/limited/capped.bin|capped|$haul_bin -q --cacert $work/cert.pem"
    "haul h2 x1 free|/free.bin|free|$haul_bin -q --cacert $work/cert.pem -x 1 --http2"
    "haul h1.1 x1 free|/free.bin|free|$haul_bin -q --cacert $work/cert.pem -x 1"
    "haul h2 default free|/free.bin|free|$haul_bin -q --cacert $work/cert.pem --http2"
    "haul h1.1 default free|/free.bin|free|$haul_bin -q --cacert $work/cert.pem"
    "curl h2 free|/free.bin|free|curl -s --http2 --cacert $work/cert.pem"
    "curl h1.1 free|/free.bin|free|curl -s --http1.1 --cacert $work/cert.pem"
)

declare -A walls protocols
for ((round = 1; round <= rounds; round++)); do
    for row in "${rows[@]}"; do
        IFS='|' read -r name path key command <<<"$row"
        out="$work/runs/out.bin"
        rm -f "$out" "$out".haul-*
        mb=$([[ $key == capped ]] && echo "$size_mb" || echo "$unthrottled_mb")
        # Fault in and free as much memory as the run will write (see bench/README.md).
        dd if=/dev/zero of=/dev/shm/haul-bench-warm bs=1M count="$((mb + 64))" status=none
        rm -f /dev/shm/haul-bench-warm
        before=$(wc -l <"$work/nginx/access.log" 2>/dev/null || echo 0)
        read -ra words <<<"$command"
        if [[ $name == curl* ]]; then words+=(-o "$out" "$base$path"); else words+=(-o "$out" "$base$path"); fi
        /usr/bin/time -f '%e' -o "$work/runs/time.txt" "${words[@]}" || { echo "warning: $name failed" >&2; continue; }
        wall=$(tail -n 1 "$work/runs/time.txt")
        walls[$name]+="$wall "
        protocols[$name]=$(tail -n +"$((before + 1))" "$work/nginx/access.log" | awk '{ n[$1]++ } END { for (p in n) printf "%s:%d ", p, n[p] }')
        if ((round == 1)) && [[ "$(sha256sum "$out" | cut -d' ' -f1)" != "${sha[$key]}" ]]; then
            echo "warning: $name wrote a wrong file" >&2
        fi
        printf '    round %d %-26s %7ss  %s\n' "$round" "$name" "$wall" "${protocols[$name]}"
    done
done

# A row's median wall time (its times are kept space-separated in walls[ROW]).
wall_median() { tr ' ' '\n' <<<"${walls[$1]}" | grep -v '^$' | median; }
echo
printf '%-26s %10s  %s\n' "row" "wall s" "requests by protocol (nginx's log)"
for row in "${rows[@]}"; do
    IFS='|' read -r name _ <<<"$row"
    [[ -n "${walls[$name]:-}" ]] || continue
    printf '%-26s %10s  %s\n' "$name" "$(wall_median "$name")" "${protocols[$name]}"
done
ratio() { awk -v a="$(wall_median "$1")" -v b="$(wall_median "$2")" 'BEGIN { printf "%.2fx", a / b }'; }
echo
echo "wall h2 / h1.1: x8 capped $(ratio "haul h2 x8 capped" "haul h1.1 x8 capped"), adaptive capped $(ratio "haul h2 adaptive capped" "haul h1.1 adaptive capped"), x1 free $(ratio "haul h2 x1 free" "haul h1.1 x1 free"), default free $(ratio "haul h2 default free" "haul h1.1 default free")"
