#!/usr/bin/env bash
# Counts the public surface (issue 37: "a public API that is only the API"). Prints, per Swift
# library module under Sources/, the number of public declarations, then the number of public types
# that `import Haul` shows. A text count over the sources (awk), not the compiler's; its rules:
#
# - A public declaration is a line whose first word, after attributes (`@inlinable`, `@Sendable`,
#   `@available(...)`, ...), is `public` or `open`: types, extensions, members, `public init`,
#   `public private(set) var`, conformance requirements alike, one per line. `package`, internal
#   and `@_exported import` lines are not counted.
# - A public type is such a declaration of a `struct`, `class`, `enum`, `actor`, `protocol` or
#   `typealias` (`final`, `indirect` and the like may come between), nested ones included.
# - `import Haul` shows the public types of Haul, of every module Sources/Haul/Exports.swift
#   re-exports whole (`@_exported import M`), and of each type it re-exports by name
#   (`@_exported import struct M.T`): T and the public types nested in T (in T's body or in an
#   `extension T`). The nesting is found by counting braces outside string literals and `//`
#   comments.
#
# Usage: bash scripts/api-count.sh           the table
#        bash scripts/api-count.sh --types   also lists the public types `import Haul` shows
set -euo pipefail
cd "$(dirname "$0")/.."

list_types=false
[[ "${1:-}" == "--types" ]] && list_types=true

decl='^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*(public|open)[[:space:]]'

printf '%-18s %s\n' "module" "public declarations"
for dir in Sources/*/; do
    module=$(basename "$dir")
    files=$(find "$dir" -name '*.swift' | sort)
    [[ -n "$files" ]] || continue
    # shellcheck disable=SC2086 # the file list is split on purpose (no spaces in the paths)
    count=$(cat $files | grep -cE "$decl" || true)
    printf '%-18s %d\n' "$module" "$count"
done

# Prints "Module<TAB>Path.To.Type" for every public type in the given module's sources.
public_types() {
    local module=$1
    find "Sources/$module" -name '*.swift' | sort | while read -r file; do
        awk -v module="$module" '
            function strip(line) {  # drops string literals and // comments, to count braces
                gsub(/\\"/, "", line); gsub(/"[^"]*"/, "\"\"", line); sub(/\/\/.*/, "", line)
                return line
            }
            {
                line = strip($0)
                kw = ""; name = ""
                if (match(line, /(^|[[:space:]])(struct|class|enum|actor|protocol|typealias|extension)[[:space:]]+[A-Za-z_][A-Za-z0-9_.]*/)) {
                    text = substr(line, RSTART, RLENGTH); sub(/^[[:space:]]+/, "", text)
                    split(text, parts, /[[:space:]]+/); kw = parts[1]; name = parts[2]
                    if (line ~ /(^|[[:space:]])(func|var|let|case)[[:space:]]/ && line !~ /^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*((public|open|package|internal|private|fileprivate|final|indirect)[[:space:]]+)*(struct|class|enum|actor|protocol|typealias|extension)[[:space:]]/) kw = ""
                }
                path = ""
                for (i = 1; i <= depth; i++) if (scope[i] != "") path = (path == "" ? scope[i] : path "." scope[i])
                if (kw != "" && kw != "extension" && $0 ~ /^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*(public|open)[[:space:]]/) {
                    print module "\t" (path == "" ? name : path "." name)
                }
                opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
                # A type or extension whose body opens on this line becomes the scope of what follows.
                if (kw != "" && kw != "typealias" && opens > closes) {
                    depth++; scope[depth] = name
                    for (k = 2; k <= opens - closes; k++) { depth++; scope[depth] = "" }
                } else if (opens > closes) {
                    for (k = 1; k <= opens - closes; k++) { depth++; scope[depth] = "" }
                } else {
                    for (k = 1; k <= closes - opens && depth > 0; k++) { delete scope[depth]; depth-- }
                }
            }
        ' "$file"
    done
}

exports=Sources/Haul/Exports.swift
whole=$(sed -nE 's/^[[:space:]]*@_exported import ([A-Za-z_]+)[[:space:]]*$/\1/p' "$exports")
named=$(sed -nE 's/^[[:space:]]*@_exported import [a-z]+ ([A-Za-z_]+)\.([A-Za-z_]+).*/\1 \2/p' "$exports")
{
    for module in Haul $whole; do public_types "$module"; done
    while read -r module type; do
        [[ -n "$module" ]] || continue
        public_types "$module" | awk -F'\t' -v t="$type" '$2 == t || index($2, t ".") == 1'
    done <<<"$named"
} >"${TMPDIR:-/tmp}/api-count.$$"
echo
printf 'public types `import Haul` shows: %d (Haul and %s; by name: %s)\n' \
    "$(wc -l <"${TMPDIR:-/tmp}/api-count.$$")" "$(echo $whole | tr ' ' ',')" "$(echo "$named" | awk '{printf "%s%s.%s", (NR > 1 ? "," : ""), $1, $2}')"
if $list_types; then
    sort "${TMPDIR:-/tmp}/api-count.$$" | awk -F'\t' '{print "  " $1 "  " $2}'
fi
rm -f "${TMPDIR:-/tmp}/api-count.$$"
