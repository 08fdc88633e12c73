#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
swift build --build-tests
swift test --skip-build --parallel --num-workers 2 "$@"
