#!/usr/bin/env bash
# Regenerates the parts of docs/ that mirror a table of the code: the manifest's key
# reference (Rules.table), the exit and error codes (ExitCode, ErrorCode) and each
# command's options (the command definitions, as the man page). Each lives between
# `<!-- BEGIN GENERATED NAME … -->` and `<!-- END GENERATED NAME -->`; the prose
# around them is written by hand. With --check, fails naming each stale section
# instead of writing it.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --configuration debug --product jgmirror >/dev/null
binary="$(swift build --configuration debug --show-bin-path)/jgmirror"
python3 scripts/docs-sections.py "$binary" "$@"
