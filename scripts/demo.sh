#!/usr/bin/env bash
# Installs what is missing, builds, starts a local origin serving generated files,
# and mirrors it with `jgmirror sync manifests/demo.yaml`. Run it twice: the second
# run sends no transfer and reports every item unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
swift build -c release --static-swift-stdlib --product jgmirror >&2
swift build -c release --static-swift-stdlib --product jgmirror-origin >&2
bin=$(swift build -c release --static-swift-stdlib --show-bin-path)
log=$(mktemp)
"$bin/jgmirror-origin" >"$log" 2>&1 &
origin_pid=$!
trap 'kill $origin_pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
export JGMIRROR_DEMO_ORIGIN=$(awk '/READY/ {print $2}' "$log")
echo "origin: $JGMIRROR_DEMO_ORIGIN" >&2
mkdir -p demo-out
"$bin/jgmirror" plan manifests/demo.yaml
"$bin/jgmirror" sync manifests/demo.yaml --progress lines --report demo-out/report.json --junit demo-out/junit.xml "$@"
echo "mirror: demo-out/mirror   report: demo-out/report.json" >&2
"$bin/jgmirror" verify manifests/demo.yaml --quiet
