#!/usr/bin/env bash
# Acceptance checks against a real nginx on loopback (plain, limit_rate 4m per request,
# HTTPS + HTTP/2 from a throwaway CA): see bench/acceptance.py.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_INSTALL_ONLY=1 bench/run.sh
swift build -c release --static-swift-stdlib --product jgmirror-origin >&2
exec python3 bench/acceptance.py --jgmirror "$(swift build -c release --static-swift-stdlib --show-bin-path)/jgmirror" "$@"
