#!/usr/bin/env bash
# Fuzzes with libFuzzer for a while (default 180 s):
#   Fuzz/run.sh [SECONDS]          the manifest parser (ManifestFuzzer)
#   Fuzz/run.sh paths [SECONDS]    the walk below the mirror root (PathFuzzer): no
#                                  path may create, change or open anything outside it
# Crashing inputs land in Fuzz/crashers/ (Fuzz/crashers-paths/); each one becomes a
# case in Tests/JGMirrorTests/Manifest/FuzzRegressionTests.swift.
set -euo pipefail
cd "$(dirname "$0")"
target=ManifestFuzzer corpus=corpus crashers=crashers dict=(-dict=yaml.dict)
if [ "${1:-}" = paths ]; then
  target=PathFuzzer corpus=corpus-paths crashers=crashers-paths dict=()
  shift
fi
seconds=${1:-180}
# -enable-testing: PathFuzzer reaches the library's internal RootDirectory.
swift build -c release --product "$target" \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing >&2
bin=$(swift build -c release --show-bin-path)/$target
mkdir -p "$corpus" "$crashers"
if [ "$target" = ManifestFuzzer ]; then
  cp -n ../manifests/*.yaml "$corpus"/ 2>/dev/null || true
else
  # Seeds: an operation byte, then a path.
  printf '\000a/b/c.bin' >"$corpus/create"
  printf '\001link/sub' >"$corpus/mkdir-through-link"
  printf '\002leaf' >"$corpus/read-leaf"
  printf '\003real/../link/x' >"$corpus/rename-climb"
  printf '\200/etc/passwd' >"$corpus/absolute"
fi
"$bin" -max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=2048 \
  -artifact_prefix="$crashers"/ "${dict[@]}" "$corpus"
