#!/usr/bin/env python3
"""Writes the Swift code listings of a DocC catalog's articles out as programs to type-check.

Usage: doc-snippets.py CATALOG_DIR OUTPUT_DIR

For each article (*.md) with ```swift listings, OUTPUT_DIR/ARTICLE.swift gets all of them in order,
as one program: a listing may use what an earlier listing of the same article declared. The
`import` lines are gathered at the top, and `import Foundation` and `import Haul` are always there.
A listing whose first line is `// Package.swift` or `// swift-tools-version:...` (which a manifest
must begin with) is a manifest, not code against Haul: it is left out. Prints the paths written, one per line.
"""

import os
import re
import sys

FENCE = re.compile(r"^```swift\s*$")


def is_manifest(first_line):
    line = first_line.strip()
    return line == "// Package.swift" or line.startswith("// swift-tools-version")


def listings(text):
    blocks, current = [], None
    for line in text.splitlines():
        if current is None:
            if FENCE.match(line.strip()):
                current = []
        elif line.strip() == "```":
            blocks.append(current)
            current = None
        else:
            current.append(line)
    return blocks


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    catalog, output = argv[1], argv[2]
    os.makedirs(output, exist_ok=True)
    for name in sorted(os.listdir(catalog)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(catalog, name), encoding="utf-8") as handle:
            blocks = [b for b in listings(handle.read()) if not (b and is_manifest(b[0]))]
        if not blocks:
            continue
        imports = ["import Foundation", "import Haul"]
        body = []
        for index, block in enumerate(blocks, start=1):
            body.append(f"// listing {index} of {name}")
            for line in block:
                if line.startswith("import "):
                    if line.strip() not in imports:
                        imports.append(line.strip())
                else:
                    body.append(line)
        path = os.path.join(output, name[: -len(".md")] + ".swift")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(imports + [""] + body) + "\n")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
