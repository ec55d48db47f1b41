#!/usr/bin/env bash
# Creates (or completes) the Python virtual environment the `haul serve` tests drive it from:
# aria2p (a real aria2 JSON-RPC client we did not write) and websocket-client (the DevTools
# protocol for the headless Chromium check). Idempotent; prints the environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${HAUL_TEST_VENV:-.build/test-venv}
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c 'import aria2p, websocket' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check aria2p websocket-client >&2
fi
echo "$(cd "$venv" && pwd)/bin/python"
