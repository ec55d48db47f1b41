#!/usr/bin/env bash
# Builds the library's DocC documentation with the toolchain's own tools (no SwiftPM plugin):
# `swift build`, swift-symbolgraph-extract for the Haul module, `docc convert` of
# Sources/Haul/Haul.docc with warnings as errors (an unresolved ``link`` is one), then two checks:
# every public symbol has a doc comment (scripts/doc-coverage.py), and the Swift listings of the
# articles type-check against the built module (scripts/doc-snippets.py). Exits non-zero on any
# warning, undocumented symbol or listing that does not compile. Reuses the debug build: `.build`,
# or $HAUL_DOCS_SCRATCH as the scratch path.
#
# The catalog documents one module, Haul: Sources/Haul/Exports.swift re-exports HaulCore and
# HaulEngine (and the HaulStore type Haul's API returns), and
# -experimental-allowed-reexported-modules puts their symbols into Haul's symbol graph.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=${HAUL_DOCS_SCRATCH:-.build}
docs="$scratch/docs"
graphs="$docs/symbol-graphs"
snippets="$docs/snippets"
archive="$docs/Haul.doccarchive"
catalog=Sources/Haul/Haul.docc

log() { printf '==> %s\n' "$*"; }

log "building: swift build --scratch-path $scratch"
swift build --scratch-path "$scratch"
bin=$(swift build --scratch-path "$scratch" --show-bin-path)
triple=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')

# What the compiler needs to load Haul's module and the modules it imports: the built Swift
# modules, the module maps of the system libraries (Sources/C*/module.modulemap), those SwiftPM
# generates for C targets (CHaulSystem), and the system libraries' header paths.
search=(-target "$triple" -I "$bin/Modules")
for map in Sources/*/module.modulemap; do
    search+=(-I "$(dirname "$map")")
done
for map in "$bin"/*.build/module.modulemap; do
    if [[ -e "$map" ]]; then search+=(-Xcc "-fmodule-map-file=$map"); fi
done
if command -v pkg-config >/dev/null 2>&1; then
    for flag in $(pkg-config --cflags-only-I libcurl sqlite3 libcrypto libpq 2>/dev/null || true); do
        search+=(-Xcc "$flag")
    done
fi

log "extracting the symbol graph: swift-symbolgraph-extract -module-name Haul"
rm -rf "$graphs" "$snippets" "$archive"
mkdir -p "$graphs"
swift-symbolgraph-extract -module-name Haul -minimum-access-level public "${search[@]}" \
    -experimental-allowed-reexported-modules=HaulCore,HaulEngine,HaulStore \
    -skip-synthesized-members -output-dir "$graphs"

# Every check runs before any of them fails the script, so one run lists every problem.
failed=()

log "converting: docc convert $catalog --warnings-as-errors"
if ! docc convert "$catalog" \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name Haul \
    --fallback-bundle-identifier Haul \
    --fallback-default-module-kind Framework \
    --transform-for-static-hosting \
    --output-path "$archive" \
    --warnings-as-errors; then
    failed+=("docc reported warnings or errors")
fi

log "checking that every public symbol has a doc comment"
if ! python3 scripts/doc-coverage.py "$graphs" .; then
    failed+=("public symbols without a doc comment")
fi

log "type-checking the articles' Swift listings"
listings=0
while IFS= read -r program; do
    listings=$((listings + 1))
    if ! swiftc -typecheck -swift-version 6 -module-name HaulDocListings "${search[@]}" "$program"; then
        failed+=("a listing of $(basename "$program" .swift).md does not compile ($program)")
    fi
done < <(python3 scripts/doc-snippets.py "$catalog" "$snippets")
echo "type-checked the listings of $listings articles"

if ((${#failed[@]} > 0)); then
    printf 'error: %s\n' "${failed[@]}" >&2
    exit 1
fi

log "documentation built: $archive"
cat <<EOF
To read it, serve the archive and open the module page:
    python3 -m http.server 8000 --bind 127.0.0.1 --directory $archive
    then open http://127.0.0.1:8000/documentation/haul
EOF
