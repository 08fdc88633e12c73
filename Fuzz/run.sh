#!/usr/bin/env bash
# Fuzzes the manifest parser with libFuzzer for a while (default 180 s).
#   Fuzz/run.sh [SECONDS]
# Crashing inputs land in Fuzz/crashers/; each one becomes a case in
# Tests/JGMirrorTests/FuzzRegressionTests.swift.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-180}
swift build -c release --product ManifestFuzzer \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library >&2
bin=$(swift build -c release --show-bin-path)/ManifestFuzzer
mkdir -p corpus crashers
cp -n ../manifests/*.yaml corpus/ 2>/dev/null || true
"$bin" -max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=2048 \
  -artifact_prefix=crashers/ -dict=yaml.dict corpus
