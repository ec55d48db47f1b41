#!/usr/bin/env bash
# Segmented download benchmark: haul over one connection, eight, and adaptive, against aria2c and
# axel with eight, from nginx on loopback with a per-connection rate limit; then haul adaptive vs one
# connection without a limit (adapting must not cost anything when one connection is enough).
#
#   bash bench/segmented.sh                                                    # 1 GiB limited, 2 GiB unlimited, 2 rounds
#   BENCH_SIZE_MB=128 BENCH_UNTHROTTLED_MB=256 BENCH_ROUNDS=1 bash bench/segmented.sh   # quick check
#
# Environment:
#   BENCH_SIZE_MB         size of the rate-limited file in MiB (default 1024)
#   BENCH_UNTHROTTLED_MB  size of the unlimited file in MiB (default 2048)
#   BENCH_ROUNDS          rounds per tool (default 2); the tables show medians
#   BENCH_RATE            nginx limit_rate per connection for /limited/ (default 20m)
#   BENCH_TMPDIR          where the served files and downloads go (default $TMPDIR or /var/tmp)
#   BENCH_SCRATCH         swift build scratch path for the release build of haul (default .build)
#
# Each tool's first-round output is checked against the source's SHA-256. Only the nginx this script
# starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-1024}
unthrottled_mb=${BENCH_UNTHROTTLED_MB:-2048}
rounds=${BENCH_ROUNDS:-2}
rate=${BENCH_RATE:-20m}
scratch=${BENCH_SCRATCH:-.build}
for value in "$size_mb" "$unthrottled_mb" "$rounds"; do
    if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
        echo "error: BENCH_SIZE_MB, BENCH_UNTHROTTLED_MB and BENCH_ROUNDS must be positive integers" >&2
        exit 2
    fi
done

# ---- tools ------------------------------------------------------------------------------------
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light aria2 axel time coreutils

# ---- temp dir, cleanup ------------------------------------------------------------------------
bench_workdir seg

mkdir -p "$work/root" "$work/out" "$work/nginx"

# ---- haul -------------------------------------------------------------------------------------
build_haul_release "$scratch" "$work/haul-build.log" || exit 1

# ---- source files -----------------------------------------------------------------------------
limited_file="$work/root/limited.bin"
unlimited_file="$work/root/unlimited.bin"
log "writing ${size_mb} MiB and ${unthrottled_mb} MiB source files under $work"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom >"$limited_file"
head -c "$((unthrottled_mb * 1024 * 1024))" /dev/urandom >"$unlimited_file"
limited_sha=$(sha256sum "$limited_file" | cut -d' ' -f1)
unlimited_sha=$(sha256sum "$unlimited_file" | cut -d' ' -f1)

# ---- nginx ------------------------------------------------------------------------------------
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" \
    NGINX_HTTP_EXTRA="access_log off;" \
    NGINX_SERVER_EXTRA="location /limited/ { alias \"$work/root/\"; limit_rate $rate; }" \
    nginx_start
limited_url="http://127.0.0.1:$nginx_port/limited/limited.bin"
unlimited_url="http://127.0.0.1:$nginx_port/unlimited.bin"
log "nginx PID $nginx_pid; limited ($rate per connection): $limited_url"

# ---- runs -------------------------------------------------------------------------------------
# Sets `cmd` for a tool writing `out` from `url`.
command_for() { # tool out url
    local out=$2 url=$3
    case "$1" in
    haul-x1) cmd=("$haul_bin" -q -x 1 -o "$out" "$url") ;;
    haul-x8) cmd=("$haul_bin" -q -x 8 -o "$out" "$url") ;;
    haul-adaptive) cmd=("$haul_bin" -q -o "$out" "$url") ;;
    aria2-x8) cmd=(aria2c -x 8 -s 8 -q --allow-overwrite=true --file-allocation=none
        -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
    axel-n8) cmd=(axel -q -n 8 -o "$out" "$url") ;;
    esac
}

declare -A results # "part/tool" -> wall seconds, one per line
declare -A failed
run_part() { # part url sha tools...
    local part=$1 url=$2 sha=$3 round tool out key got w
    shift 3
    for ((round = 1; round <= rounds; round++)); do
        for tool in "$@"; do
            key="$part/$tool"
            [[ -z "${failed[$key]:-}" ]] || continue
            out="$work/out/$tool.bin"
            rm -f "$out" "$out.aria2" "$out.st" "$out.haul-partial" "$out.haul-resume"
            sync
            command_for "$tool" "$out" "$url"
            if ! /usr/bin/time -f '%e' -o "$work/time.txt" "${cmd[@]}" </dev/null >"$work/run.log" 2>&1; then
                echo "warning: $key failed in round $round:" >&2
                tail -n 20 "$work/run.log" >&2
                failed[$key]=1
                continue
            fi
            w=$(tail -n 1 "$work/time.txt")
            printf '    %s round %d %-14s wall %7ss\n' "$part" "$round" "$tool" "$w"
            if ((round == 1)); then
                got="(no output file)"
                [[ -f "$out" ]] && got=$(sha256sum "$out" | cut -d' ' -f1)
                if [[ "$got" != "$sha" ]]; then
                    echo "warning: $key did not download the file intact: sha256 $got" >&2
                    tail -n 20 "$work/run.log" >&2
                    failed[$key]=1
                fi
            fi
            results[$key]+="$w"$'\n'
            rm -f "$out" "$out.aria2" "$out.st"
        done
    done
}

limited_tools=(haul-x1 haul-x8 haul-adaptive aria2-x8 axel-n8)
unlimited_tools=(haul-x1 haul-adaptive)
log "part 1: ${size_mb} MiB at $rate per connection, $rounds round(s)"
run_part limited "$limited_url" "$limited_sha" "${limited_tools[@]}"
log "part 2: ${unthrottled_mb} MiB without a limit, $rounds round(s)"
run_part unlimited "$unlimited_url" "$unlimited_sha" "${unlimited_tools[@]}"

# ---- report -----------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

declare -A wall
report() { # part size_mb baseline tools...
    local part=$1 mb=$2 baseline=$3 tool key lines speed
    shift 3
    printf '%-14s %12s %10s %22s\n' tool "wall s (med)" "MiB/s" "speedup vs haul -x 1"
    for tool in "$@"; do
        key="$part/$tool"
        lines=${results[$key]:-}
        if [[ -z "$lines" || -n "${failed[$key]:-}" ]]; then
            printf '%-14s %s\n' "$tool" "failed or not run"
            continue
        fi
        wall[$key]=$(printf '%s' "$lines" | median)
        speed=$(awk -v s="$mb" -v w="${wall[$key]}" 'BEGIN { if (w > 0) printf "%.1f", s / w; else print "inf" }')
        printf '%-14s %12.2f %10s %22s\n' "$tool" "${wall[$key]}" "$speed" \
            "$(ratio "${wall[$part/$baseline]:-0}" "${wall[$key]}")"
    done
}

echo
printf 'Part 1: %d MiB, nginx limit_rate %s per connection, %d round(s), output in %s\n' "$size_mb" "$rate" "$rounds" "$base_tmp"
report limited "$size_mb" haul-x1 "${limited_tools[@]}"
echo
# A speedup over aria2 above 1 means haul is faster.
printf 'haul -x 8 vs aria2 -x 8: %s; haul adaptive vs aria2 -x 8: %s (aria2 wall / haul wall)\n' \
    "$(ratio "${wall[limited/aria2-x8]:-0}" "${wall[limited/haul-x8]:-0}")" \
    "$(ratio "${wall[limited/aria2-x8]:-0}" "${wall[limited/haul-adaptive]:-0}")"
echo
printf 'Part 2: %d MiB without a limit, %d round(s)\n' "$unthrottled_mb" "$rounds"
report unlimited "$unthrottled_mb" haul-x1 "${unlimited_tools[@]}"
echo
printf 'haul adaptive wall / haul -x 1 wall: %s (target: at most 1.10x)\n' \
    "$(ratio "${wall[unlimited/haul-adaptive]:-0}" "${wall[unlimited/haul-x1]:-0}")"
