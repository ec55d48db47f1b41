#!/usr/bin/env bash
# The main job, end to end on this machine: build haul, serve a file from a private nginx on
# loopback, download it, interrupt the download with Ctrl-C (SIGINT), run the same command again to
# resume it, and check the result by SHA-256. Installs the Debian packages it needs if missing
# (scripts/packages.sh).
#
#   bash scripts/demo.sh            # a 200 MiB file
#   DEMO_SIZE_MB=50 bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

size_mb=${DEMO_SIZE_MB:-200}
log() { printf '==> %s\n' "$*"; }

source scripts/packages.sh
source scripts/nginx.sh
install_missing "${build_packages[@]}" "${demo_packages[@]}"

# The release binary as it ships: Swift's own libraries linked in (README, "For your own downloads").
log "building: swift build -c release --static-swift-stdlib"
swift build -c release --static-swift-stdlib 2>&1 | tail -n 1
haul="$(swift build -c release --static-swift-stdlib --show-bin-path)/haul"

work=$(mktemp -d "${TMPDIR:-/tmp}/haul-demo.XXXXXX")
haul_pid=""
cleanup() {
    [[ -z "$haul_pid" ]] || kill "$haul_pid" 2>/dev/null || true
    nginx_stop
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/root" "$work/out"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom >"$work/root/file.bin"
expected=$(sha256sum "$work/root/file.bin" | cut -d' ' -f1)
# A location capped per connection so that the whole file takes at least 6 s even on haul's
# default of up to 8 connections: there is time to interrupt it after 1 s.
rate_mb=$((size_mb / 48 > 0 ? size_mb / 48 : 1))
NGINX_DIR="$work/nginx" NGINX_ROOT="$work/root" \
    NGINX_SERVER_EXTRA="location /slow/ { alias \"$work/root/\"; limit_rate ${rate_mb}m; }" \
    nginx_start
url="http://127.0.0.1:$nginx_port/slow/file.bin"
log "nginx (PID $nginx_pid) serves a $size_mb MiB file at $url ($rate_mb MiB/s per connection)"

log "haul -o $work/out/file.bin $url   (interrupted after 1 s)"
"$haul" -q -o "$work/out/file.bin" "$url" &
haul_pid=$!
sleep 1
if ! kill -INT "$haul_pid" 2>/dev/null; then
    echo "error: haul ended before it could be interrupted; nothing to resume" >&2
    exit 1
fi
status=0
wait "$haul_pid" || status=$?
haul_pid=""
if [[ $status -ne 130 || ! -e "$work/out/file.bin.haul-partial" ]]; then
    echo "error: the interrupted haul exited with $status (expected 130) or left no file.bin.haul-partial" >&2
    exit 1
fi
log "exit code $status (interrupted); the bytes so far are kept in file.bin.haul-partial"

log "the same command again: it resumes"
"$haul" -o "$work/out/file.bin" "$url"
actual=$(sha256sum "$work/out/file.bin" | cut -d' ' -f1)
if [[ "$actual" == "$expected" ]]; then
    log "sha256 matches the source: $actual"
else
    echo "error: sha256 $actual, expected $expected" >&2
    exit 1
fi
