#!/usr/bin/env bash
# Single-file download benchmark: haul (libcurl engine, and --engine urlsession) vs curl vs aria2c (one
# connection) against nginx on loopback.
#
#   bash bench/single.sh                                   # 2 GiB, 3 rounds
#   BENCH_SIZE_MB=256 BENCH_ROUNDS=1 bash bench/single.sh  # quick check of the script
#
# Environment:
#   BENCH_SIZE_MB   size of the served file in MiB (default 2048)
#   BENCH_ROUNDS    rounds per tool (default 3); the table shows medians
#   BENCH_TMPDIR    where the served file and the downloads go (default $TMPDIR or /var/tmp); use a disk,
#                   not tmpfs, to measure writing to disk
#   BENCH_NO_URLSESSION  1: leave out `--engine urlsession` (default 0)
#   BENCH_SCRATCH   swift build scratch path for the release build of haul (default .build)
#
# Rows: haul (default, -x 1, --checksum, --engine urlsession), curl, curl-sync (curl, then
# `sync -d` on its file: the durability haul gives a file before naming it), aria2c (one connection).
#
# Every download is written to a file on disk and deleted before the next run. Wall time, CPU time
# (user + sys) and peak RSS come from /usr/bin/time. The first round's downloads are checked against
# the source's SHA-256. Only the nginx this script starts is stopped, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${BENCH_SIZE_MB:-2048}
rounds=${BENCH_ROUNDS:-3}
if ! [[ "$size_mb" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "error: BENCH_SIZE_MB and BENCH_ROUNDS must be positive integers" >&2
    exit 2
fi

# ---- tools ------------------------------------------------------------------------------------
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light curl aria2 time coreutils

# ---- temp dir, cleanup ------------------------------------------------------------------------
bench_workdir single

mkdir -p "$work/root" "$work/out" "$work/nginx"

# ---- source file ------------------------------------------------------------------------------
source_file="$work/root/file.bin"
log "writing a ${size_mb} MiB source file under $work"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom >"$source_file"
source_sha=$(sha256sum "$source_file" | cut -d' ' -f1) # also warms the page cache for every tool
log "source sha256 $source_sha"

# ---- nginx ------------------------------------------------------------------------------------
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" \
    NGINX_HTTP_EXTRA="log_format bench '\$request_uri \$status \$body_bytes_sent \$http_range'; access_log \"$work/nginx/access.log\" bench;" \
    nginx_start
url="http://127.0.0.1:$nginx_port/file.bin"
log "nginx PID $nginx_pid serving $url"

# ---- haul -------------------------------------------------------------------------------------
tools=(curl curl-sync aria2)
scratch=${BENCH_SCRATCH:-.build}
haul_bin=$scratch/release/haul
log "building haul: swift build -c release --static-swift-stdlib --scratch-path $scratch"
if swift build -c release --static-swift-stdlib --scratch-path "$scratch" >"$work/haul-build.log" 2>&1 && [[ -x "$haul_bin" ]]; then
    tools=(haul haul-x1 haul-sha haul-us curl curl-sync aria2)
    # BENCH_NO_URLSESSION=1 leaves out the second engine (a 2 GiB run of it takes about 40 s).
    if [[ "${BENCH_NO_URLSESSION:-0}" == 1 ]]; then tools=(haul haul-x1 haul-sha curl curl-sync aria2); fi
else
    echo "warning: could not build $haul_bin; benchmarking the others only. Build output (tail):" >&2
    tail -n 30 "$work/haul-build.log" >&2
fi

# ---- runs -------------------------------------------------------------------------------------
# Sets `cmd` to the download command line for a tool writing to an output file.
command_for() { # tool out-file
    local out=$2
    case "$1" in
    haul) cmd=("$haul_bin" -q -o "$out" "$url") ;;
    haul-x1) cmd=("$haul_bin" -q -x 1 -o "$out" "$url") ;;
    # The same download verified with --checksum: the hash runs as the bytes arrive.
    haul-sha) cmd=("$haul_bin" -q --checksum "sha256=$source_sha" -o "$out" "$url") ;;
    # The second engine: Foundation's URLSession (FoundationNetworking on Linux), default options.
    haul-us) cmd=("$haul_bin" -q --engine urlsession -o "$out" "$url") ;;
    curl) cmd=(curl -s -o "$out" "$url") ;;
    # curl, then the file's data made durable (`sync -d`: fdatasync): what haul does before it gives
    # the file its name. curl alone leaves the data in the page cache when it exits.
    curl-sync) cmd=(sh -c 'curl -s -o "$1" "$2" && sync -d "$1"' curl-sync "$out" "$url") ;;
    aria2) cmd=(aria2c -x1 -q --allow-overwrite=true --file-allocation=none
        -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
    esac
}

declare -A results # tool -> lines "wall user sys rss_kib"
declare -A failed
for ((round = 1; round <= rounds; round++)); do
    for tool in "${tools[@]}"; do
        [[ -z "${failed[$tool]:-}" ]] || continue
        out="$work/out/$tool.bin"
        rm -f "$out" "$out.aria2"
        sync
        # Freed memory goes back to the host within seconds here, and faulting it in again costs
        # more than the write itself: fault in and free as much as the run will write, right before it.
        dd if=/dev/zero of=/dev/shm/haul-bench-warm bs=1M count="$((size_mb + 64))" status=none 2>/dev/null || true
        rm -f /dev/shm/haul-bench-warm
        command_for "$tool" "$out"
        if ! /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "${cmd[@]}" </dev/null >"$work/run.log" 2>&1; then
            echo "warning: $tool failed in round $round:" >&2
            tail -n 20 "$work/run.log" >&2
            failed[$tool]=1
            rm -f "$out" "$out.aria2"
            continue
        fi
        measured=$(tail -n 1 "$work/time.txt")
        read -r w u s m <<<"$measured"
        printf '    round %d %-6s wall %6ss  user %6ss  sys %6ss  rss %8s KiB\n' "$round" "$tool" "$w" "$u" "$s" "$m"
        if ((round == 1)); then
            got="(no output file)"
            if [[ -f "$out" ]]; then got=$(sha256sum "$out" | cut -d' ' -f1); fi
            if [[ "$got" != "$source_sha" ]]; then
                echo "warning: $tool did not download the file intact: sha256 $got; its output:" >&2
                tail -n 20 "$work/run.log" >&2
                failed[$tool]=1
            fi
        fi
        results[$tool]+="$measured"$'\n'
        rm -f "$out" "$out.aria2"
    done
done

# ---- report -----------------------------------------------------------------------------------

declare -A wall cpu rss
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
echo
printf 'Single file, %d MiB, %d round(s), nginx on 127.0.0.1, output written to %s\n' "$size_mb" "$rounds" "$base_tmp"
printf '%-9s %6s %14s %14s %12s %12s\n' tool runs "wall s (med)" "CPU s (med)" "RSS MiB max" "MiB/s"
for tool in haul haul-x1 haul-sha haul-us curl curl-sync aria2; do
    lines=${results[$tool]:-}
    if [[ -z "$lines" || -n "${failed[$tool]:-}" ]]; then
        printf '%-9s %6s\n' "$tool" "failed or not run"
        continue
    fi
    runs=$(printf '%s' "$lines" | grep -c .)
    wall[$tool]=$(printf '%s' "$lines" | awk '{ print $1 }' | median)
    cpu[$tool]=$(printf '%s' "$lines" | awk '{ print $2 + $3 }' | median)
    rss[$tool]=$(printf '%s' "$lines" | awk '$4 > m { m = $4 } END { printf "%.1f", m / 1024 }')
    speed=$(awk -v s="$size_mb" -v w="${wall[$tool]}" 'BEGIN { if (w > 0) printf "%.0f", s / w; else print "inf" }')
    printf '%-9s %6d %14.2f %14.2f %12s %12s\n' "$tool" "$runs" "${wall[$tool]}" "${cpu[$tool]}" "${rss[$tool]}" "$speed"
done

if [[ -n "${wall[haul]:-}" && -n "${wall[curl]:-}" ]]; then
    echo
    printf 'haul / curl: wall %s, CPU %s, RSS %s\n' \
        "$(ratio "${wall[haul]}" "${wall[curl]}")" \
        "$(ratio "${cpu[haul]}" "${cpu[curl]}")" \
        "$(ratio "${rss[haul]}" "${rss[curl]}")"
else
    echo
    echo "haul / curl: n/a (haul did not run or failed)"
fi
if [[ -n "${wall[haul]:-}" && -n "${wall[curl-sync]:-}" ]]; then
    printf 'haul / (curl + sync -d), the same durability: wall %s, CPU %s\n' \
        "$(ratio "${wall[haul]}" "${wall[curl-sync]}")" "$(ratio "${cpu[haul]}" "${cpu[curl-sync]}")"
fi
if [[ -n "${wall[haul-x1]:-}" && -n "${wall[curl]:-}" ]]; then
    printf 'haul -x 1 / curl: wall %s, CPU %s\n' \
        "$(ratio "${wall[haul-x1]}" "${wall[curl]}")" "$(ratio "${cpu[haul-x1]}" "${cpu[curl]}")"
fi
if [[ -n "${cpu[haul]:-}" && -n "${cpu[haul-sha]:-}" ]]; then
    printf 'haul --checksum sha256 / haul: CPU %s, wall %s\n' \
        "$(ratio "${cpu[haul-sha]}" "${cpu[haul]}")" "$(ratio "${wall[haul-sha]}" "${wall[haul]}")"
fi
if [[ -n "${wall[haul-us]:-}" && -n "${wall[curl]:-}" && -n "${wall[haul]:-}" ]]; then
    printf 'haul --engine urlsession / curl: wall %s, CPU %s; / haul (libcurl): wall %s, CPU %s\n' \
        "$(ratio "${wall[haul-us]}" "${wall[curl]}")" "$(ratio "${cpu[haul-us]}" "${cpu[curl]}")" \
        "$(ratio "${wall[haul-us]}" "${wall[haul]}")" "$(ratio "${cpu[haul-us]}" "${cpu[haul]}")"
fi
