#!/usr/bin/env bash
# Installs what is missing, builds everything, runs the whole test suite, then the
# acceptance checks against a real nginx on loopback (bench/acceptance.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# The metrics tests read jgmirror's textfile back with Prometheus' own Python parser.
python3 -c 'import prometheus_client' 2>/dev/null || python3 -m pip install -q prometheus-client
# The code as a newcomer meets it: swift-format's strict lint finds nothing, and each
# folder of the library names only the folders before it (ARCHITECTURE.md), and every
# citation of docs/ names a page and a heading that exist.
swift format lint --strict --recursive Sources Tests Examples
python3 scripts/check-folders.py
python3 scripts/check-citations.py
# Warnings fail the build of our own targets (Package.swift: every build, this one, the
# man page plugin's and the release build, shares those flags, so none rebuilds
# another's modules); SwiftPM builds the dependencies with warnings suppressed.
swift build --build-tests
# In parallel: tests wait on events with generous limits, never on fixed sleeps, so
# a loaded machine makes them slower, not red.
#
# One malloc arena, as the jgmirror binary sets for itself: Foundation's Process.run
# (the tests start jgmirror with it) reads up to 256 bytes past the end of a 32 KiB
# directory buffer (findMaximumOpenFromProcSelfFD, seen under AddressSanitizer). In a
# thread's own arena that buffer can end where the mapping does, and the read then
# crashes the test process; the main arena keeps spare room past its top.
MALLOC_ARENA_MAX=1 swift test --skip-build "$@"
# The man page is current and `make install` ships binary, man page and completions.
scripts/check-install.sh
# The sections of docs/ made from the code's tables (manifest keys, options, exit and
# error codes) are current.
scripts/docs.sh --check
# The Containerfile's runtime stage installs every library the release binary needs.
scripts/check-container.sh "$(swift build --show-bin-path)/jgmirror"

# nginx, TLS and HTTP/2 on loopback, and Debian's repository tools for the apt client
# check: installed when run as root, otherwise the command to install them is printed
# and these checks are left out.
extra=(nginx python3 openssl iproute2 apt-utils gnupg gpgv xz-utils)
missing=()
for package in "${extra[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" -eq 0 ]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1) \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } \
    || true
  missing=()
  for package in "${extra[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "nginx acceptance checks left out; to run them: sudo apt-get install -y ${missing[*]}" >&2
  exit 0
fi
# The debug build the tests ran (with jgmirror-origin, the acceptance checks' dropping
# origin, beside it), so that CI builds once: the checks are of behaviour, and their
# one comparison of speed (8 connections against one over nginx's limit_rate) holds
# in a debug build by a wide margin (0.15 × against the 0.5 × it asks).
binary="$(swift build --show-bin-path)/jgmirror"
python3 bench/acceptance.py --jgmirror "$binary"
# The real apt-get reads an apt: mirror while it is synced, over three upstream
# generations and each tampering case (docs/apt.md#checking-with-apt).
scripts/apt-check.sh "$binary"
# A real Slurm cluster of four nodes on loopback runs Examples/slurm (as root; otherwise
# it prints how to run it and is left out).
scripts/slurm-check.sh "$binary"
