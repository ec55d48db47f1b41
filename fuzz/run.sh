#!/usr/bin/env bash
# Builds and runs the libFuzzer targets for HaulCore's parsers.
#
#   bash fuzz/run.sh TARGET SECONDS   one target (ContentRange, ContentRangeFuzz, ...)
#   bash fuzz/run.sh all SECONDS      every target in turn, SECONDS each
#   bash fuzz/run.sh list             the target names
#
# FUZZ_SWIFT_FLAGS adds swiftc flags; FUZZ_SWIFT_FLAGS="-D FUZZ_SKIP_KNOWN_BUGS" makes the targets
# step over the open bugs listed in fuzz/README.md ("Findings"), to look for new ones while those are unfixed.
#
# Each target is compiled from every Swift file under Sources/HaulCore (plus the sources its `// fuzz-sources:`
# line names), fuzz/Support and its own file with
# `swiftc -O -sanitize=fuzzer,address` into .build/fuzz/ (with a -package-name: Haul's modules
# declare most of what the targets call `package`). The committed seeds in
# fuzz/corpus/TARGET/ are read, never written; what libFuzzer finds goes to
# .build/fuzz/corpus/TARGET/ and crash inputs to .build/fuzz/artifacts/TARGET/.
# Exits non-zero if a target fails to compile or finds a crash. Needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: bash fuzz/run.sh TARGET|all SECONDS   (bash fuzz/run.sh list for the targets)" >&2
    exit 2
}

targets=()
for file in fuzz/Targets/*Fuzz.swift; do
    name=$(basename "$file" .swift)
    targets+=("$name")
done
((${#targets[@]} > 0)) || { echo "error: no fuzz targets in fuzz/Targets" >&2; exit 1; }

if [[ "${1:-}" == "list" ]]; then
    printf '%s\n' "${targets[@]}"
    exit 0
fi
[[ $# -eq 2 && "$2" =~ ^[0-9]+$ && "$2" -gt 0 ]] || usage
seconds=$2

selected=()
if [[ "$1" == "all" ]]; then
    selected=("${targets[@]}")
else
    wanted=${1%.swift}
    wanted=${wanted%Fuzz}Fuzz
    for name in "${targets[@]}"; do
        [[ "$name" == "$wanted" ]] && selected=("$name")
    done
    if ((${#selected[@]} == 0)); then
        echo "error: unknown fuzz target '$1'; known: ${targets[*]}" >&2
        exit 2
    fi
fi

build=.build/fuzz
mkdir -p "$build"
command -v swiftc >/dev/null 2>&1 || { echo "error: swiftc is not in PATH" >&2; exit 1; }

# The toolchain's lld links sanitized Swift without gold's flood of ASan symbol warnings.
linker=()
if [[ -x "$(dirname "$(command -v swiftc)")/ld.lld" ]]; then
    linker=(-use-ld=lld)
fi

# Compile everything first (in parallel, one job per CPU), so a toolchain without the fuzzer
# runtime fails before any run, and loudly: a target that does not build is never skipped.
# A target that fuzzes code beyond HaulCore names its other sources in a line of its own,
# e.g. `// fuzz-sources: Sources/HaulRPC/*.swift` (a glob, relative to the package).
extra_sources() {
    local globs
    globs=$(sed -n 's|^// fuzz-sources: ||p' "fuzz/Targets/$1.swift")
    # shellcheck disable=SC2086 # the globs are expanded on purpose
    [[ -z "$globs" ]] || printf '%s\n' $globs
}
compile() {
    local extra=() core=()
    mapfile -t extra < <(extra_sources "$1")
    # HaulCore's sources live in folders by stage (HTTP/, Resume/, ...).
    mapfile -t core < <(find Sources/HaulCore -name '*.swift' | sort)
    # shellcheck disable=SC2086 # FUZZ_SWIFT_FLAGS is a list of flags, split on purpose
    swiftc -O -sanitize=fuzzer,address -parse-as-library "${linker[@]}" ${FUZZ_SWIFT_FLAGS:-} \
        -module-name "$1" -package-name Haul \
        "${core[@]}" "${extra[@]}" fuzz/Support/*.swift "fuzz/Targets/$1.swift" \
        -o "$build/$1"
}
jobs_max=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
pids=()
compile_failed=()
reap() {  # waits for the oldest compile still running
    local index=$1 name=${selected[$1]}
    if ! wait "${pids[$index]}"; then
        cat "$build/$name.compile.log" >&2
        compile_failed+=("$name")
    fi
}
reaped=0
for index in "${!selected[@]}"; do
    name=${selected[$index]}
    if ((index - reaped >= jobs_max)); then
        reap "$reaped"
        reaped=$((reaped + 1))
    fi
    echo "==> compiling $name"
    compile "$name" >"$build/$name.compile.log" 2>&1 &
    pids+=($!)
done
while ((reaped < ${#selected[@]})); do
    reap "$reaped"
    reaped=$((reaped + 1))
done
if ((${#compile_failed[@]} > 0)); then
    echo "error: fuzz targets failed to compile with -sanitize=fuzzer,address: ${compile_failed[*]}" >&2
    echo "       (see the compiler output above; targets are never skipped, also not on a toolchain without libclang_rt.fuzzer)" >&2
    exit 1
fi

# Swift's own crash handler fights ASan over the signal; libFuzzer prints the stack instead.
export SWIFT_BACKTRACE=enable=no
# The Swift runtime keeps metadata caches for the process's life; they are not leaks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}

# FUZZ_SEED fixes libFuzzer's random sequence (CI sets it, so a smoke run explores a prefix of the
# same inputs every time and a crash in CI is reproducible); unset, every run explores anew.
seed_args=()
if [[ -n "${FUZZ_SEED:-}" ]]; then seed_args=(-seed="$FUZZ_SEED"); fi

failed=()
for name in "${selected[@]}"; do
    work="$build/corpus/$name"
    artifacts="$build/artifacts/$name/"
    seeds="fuzz/corpus/$name"
    mkdir -p "$work" "$artifacts"
    corpora=("$work")
    [[ -d "$seeds" ]] && corpora+=("$seeds")
    echo "==> fuzzing $name for $seconds s (seeds: $seeds, crashes: $artifacts)"
    status=0
    "$build/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 "${seed_args[@]}" -artifact_prefix="$artifacts" "${corpora[@]}" >"$build/$name.log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' "$build/$name.log" || true
    if ((status != 0)); then
        echo "error: $name failed (exit $status); the log follows, the input is in $artifacts" >&2
        tail -n 60 "$build/$name.log" >&2
        failed+=("$name")
    fi
done

if ((${#failed[@]} > 0)); then
    echo "FUZZING FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "==> fuzzing passed: ${selected[*]}"
