#!/usr/bin/env bash
# The link simulator's grid (Sources/LinkSimulator): every RTT × per-connection rate ×
# file size × connection count of issue 12, with and without one slow connection,
# simulated under every scheduling policy in virtual time. Prints the tables;
#   bench/simulate.sh --publish   also replaces them in bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --static-swift-stdlib --product jgmirror-linksim >&2
tables="$("$(swift build -c release --static-swift-stdlib --show-bin-path)/jgmirror-linksim" grid)"
printf '%s\n' "$tables"
if [ "${1:-}" = "--publish" ]; then
  TABLES="$tables" python3 - bench/RESULTS.md <<'PY'
import os, sys
path = sys.argv[1]
start, end = "<!-- simulator grid: written by bench/simulate.sh --publish -->", "<!-- /simulator grid -->"
text = open(path).read()
if start not in text or end not in text:
    sys.exit(f"{path} has no {start} … {end} section")
before, rest = text.split(start, 1)
open(path, "w").write(before + start + "\n\n" + os.environ["TABLES"] + "\n\n" + end + rest.split(end, 1)[1])
PY
fi
