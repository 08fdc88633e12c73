#!/usr/bin/env bash
# Runs jgmirror side by side with aria2c, axel, curl and wget2 against nginx on
# loopback and prints times, ratios and peak RSS (results: bench/RESULTS.md).
#   bench/run.sh                 every scenario, median of 3 interleaved rounds
#   bench/run.sh --reps 5        more rounds
#   bench/run.sh --only small2000,verify1g
#   bench/run.sh --only small2000h2,many20k,rss100k   HTTPS + HTTP/2, 20,000 and 100,000 small items
#   bench/run.sh --only hosts-refused,hosts-mirror200,mirrors2   the host rows (bench/hosts.py):
#                                refusing, silent, restarting, dripping and busy servers, mirrors
#   bench/run.sh --egress        what each tool costs nginx and Apache, from their access logs
#                                (bench/egress.py; --egress --reps 1 --no-1g for a quick look)
#   bench/run.sh --only apt500   an apt repository side by side with debmirror and aptly
#                                (bench/apt.py): first sync, 5 % changed, no-op, apt reading
#   bench/run.sh --serve         just start nginx with the bench data and wait
#   bench/run.sh --publish       also rewrite bench/RESULTS.md's tables, results.json and the chart
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(nginx apache2 aria2 axel wget2 curl hyperfine python3 openssl time iproute2 strace
  debmirror aptly apt-utils gnupg gpgv xz-utils
  libcurl4-openssl-dev libyaml-dev libssl-dev liblzma-dev zlib1g-dev pkg-config)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing: ${missing[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "the benchmark needs: ${missing[*]}. Run:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
swift build -c release --static-swift-stdlib --product jgmirror >&2
if [ -n "${BENCH_INSTALL_ONLY:-}" ]; then exit 0; fi
if [ "${1:-}" = "--egress" ]; then
  shift
  exec python3 bench/egress.py --jgmirror "$(swift build -c release --static-swift-stdlib --show-bin-path)/jgmirror" "$@"
fi
exec python3 bench/bench.py --jgmirror "$(swift build -c release --static-swift-stdlib --show-bin-path)/jgmirror" "$@"
