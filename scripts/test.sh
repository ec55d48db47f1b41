#!/usr/bin/env bash
# The tests, set up and run on this machine: installs the Debian packages the build and the tests
# need if missing (scripts/packages.sh), makes the tests' Python environment
# (scripts/test-venv.sh), then runs `swift build && swift test --no-parallel`. Extra arguments go
# to swift test; the exit code is the test run's.
#
#   bash scripts/test.sh
#   bash scripts/test.sh --filter GIDTests
#
# --no-parallel: several tests block a thread on a child process or a server, and on a 2-core
# machine parallel suites would starve each other's timing.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }

source scripts/packages.sh
source scripts/install.sh
install_missing "${build_packages[@]}" "${test_packages[@]}"

if ! command -v swift >/dev/null 2>&1; then
    echo "error: swift is not in PATH; install a Swift 6 toolchain" >&2
    exit 1
fi

# The Python environment of the haul serve tests (aria2p, websocket-client, from PyPI); the tests
# would make it on first use, here it is made once, before anything is timed.
log "making the tests' Python environment: bash scripts/test-venv.sh"
run bash scripts/test-venv.sh

log "running the tests: swift build && swift test --no-parallel${*:+ $*}"
run swift build
run swift test --no-parallel "$@"
