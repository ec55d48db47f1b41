#!/usr/bin/env bash
# The many-small-files matrix of issue 22: bench/batch.sh for 1,000 x 64 KiB and 10,000 x 4 KiB,
# over HTTP and HTTPS, 8 and 64 transfers at a time; haul against curl --parallel and aria2c in
# each run. Prints each run's table and, at the end, the haul / curl ratios of every run.
#
#   bash bench/many.sh                   # the whole matrix, 3 rounds each (long: ~20 minutes here)
#   BENCH_ROUNDS=1 bash bench/many.sh    # one round each
#   BENCH_MATRIX="1000:64:8:0" bash bench/many.sh   # chosen runs: files:KiB:jobs:tls, space-separated
set -euo pipefail
cd "$(dirname "$0")/.."
matrix=${BENCH_MATRIX:-"1000:64:8:0 1000:64:64:0 1000:64:8:1 1000:64:64:1 10000:4:8:0 10000:4:64:0 10000:4:8:1 10000:4:64:1"}
summary=()
for entry in $matrix; do
    IFS=: read -r files kb jobs tls <<<"$entry"
    scheme=$([[ "$tls" == 1 ]] && echo https || echo http)
    echo "==== $files x $kb KiB, -j $jobs, $scheme"
    output=$(BENCH_FILES=$files BENCH_FILE_KB=$kb BENCH_JOBS=$jobs BENCH_TLS=$tls bash bench/batch.sh 2>&1) || {
        echo "$output" | tail -n 20
        summary+=("$files x $kb KiB -j $jobs $scheme: failed")
        continue
    }
    echo "$output" | sed -n '/ files of /,$p'
    summary+=("$files x $kb KiB -j $jobs $scheme: $(echo "$output" | grep '^haul / curl' || echo 'n/a')")
done
echo
echo "==== haul / curl, every run"
printf '%s\n' "${summary[@]}"
