#!/usr/bin/env python3
"""Fails, listing them, when a public symbol in the symbol graphs has no doc comment.

Usage: doc-coverage.py SYMBOL_GRAPH_DIR [SOURCE_ROOT]

Reads every *.symbols.json in SYMBOL_GRAPH_DIR (swift-symbolgraph-extract's output, extracted with
-minimum-access-level public) and prints one line per symbol whose doc comment is missing or blank:
FILE:LINE: KIND PATH. Paths are shown relative to SOURCE_ROOT (default: the current directory).

A symbol that implements a protocol requirement without a comment of its own inherits the
requirement's comment in the graph (`description`, `==`, `init(from:)`); DocC shows that comment,
so it counts as documented, and the summary says how many did so. Members synthesized by the
compiler are left out at extraction (-skip-synthesized-members).

Exit status: 0 when every symbol is documented, 1 otherwise, 2 on unusable input.
"""

import json
import os
import sys
from urllib.parse import unquote, urlparse


def comment_text(symbol):
    lines = (symbol.get("docComment") or {}).get("lines") or []
    return "\n".join(line.get("text", "") for line in lines).strip()


def location(symbol, root):
    loc = symbol.get("location") or {}
    uri = loc.get("uri")
    if not uri:
        return "?"
    path = unquote(urlparse(uri).path)
    try:
        path = os.path.relpath(path, root)
    except ValueError:
        pass
    line = (loc.get("position") or {}).get("line")
    # Symbol graph positions are zero-based; editors and compilers count lines from 1.
    return f"{path}:{line + 1}" if line is not None else path


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    graph_dir = argv[1]
    root = os.path.abspath(argv[2] if len(argv) == 3 else ".")
    files = sorted(name for name in os.listdir(graph_dir) if name.endswith(".symbols.json"))
    if not files:
        print(f"error: no *.symbols.json in {graph_dir}", file=sys.stderr)
        return 2

    total = 0
    inherited = 0
    missing = []
    for name in files:
        with open(os.path.join(graph_dir, name), encoding="utf-8") as handle:
            graph = json.load(handle)
        module = graph["module"]["name"]
        for symbol in graph["symbols"]:
            total += 1
            if comment_text(symbol):
                doc_module = (symbol.get("docComment") or {}).get("module")
                if doc_module and doc_module != module and "uri" not in symbol["docComment"]:
                    inherited += 1
                continue
            kind = symbol["kind"]["displayName"].lower()
            path = ".".join(symbol["pathComponents"])
            missing.append((location(symbol, root), kind, path))

    missing.sort()
    for where, kind, path in missing:
        print(f"{where}: undocumented public {kind} {path}")
    documented = total - len(missing)
    print(
        f"documentation coverage: {documented}/{total} public symbols documented"
        f" ({inherited} by the comment of the protocol requirement they implement),"
        f" {len(missing)} undocumented"
    )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
