#!/usr/bin/env bash
# Keeps the Containerfile's runtime stage honest without a container engine: every
# shared library `ldd` lists for jgmirror must belong to a Debian package that the
# runtime stage's `apt-get install` line installs, or one of their dependencies, or a
# package every Debian image has (priority required, and what those depend on). Usage:
#   scripts/check-container.sh [BINARY]     (default: the debug build, built if missing)
#
# The Containerfile builds with the Swift runtime linked in (--static-swift-stdlib),
# so the runtime stage has no Swift runtime. A build without that flag (the debug
# build CI tests) lists the toolchain's runtime libraries as well; they are left out
# here, and every other library is the same in both builds, as both link the same
# targets. The Containerfile's build line must then carry the flag.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-}
if [ -z "$binary" ]; then
  swift build --product jgmirror >/dev/null
  binary="$(swift build --show-bin-path)/jgmirror"
fi
grep -q -- '^RUN swift build -c release --static-swift-stdlib --product jgmirror' Containerfile \
  || { echo "container check: the Containerfile no longer builds with --static-swift-stdlib" >&2; exit 1; }

# The packages of the last stage's `apt-get install` (continuation lines joined).
runtime=$(awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END{printf "%s", stage}' Containerfile \
  | sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep -o 'apt-get install[^&]*' | head -1 \
  | tr ' ' '\n' | grep -v -e '^-' -e '^$' -e '^apt-get$' -e '^install$' || true)
[ -n "$runtime" ] || { echo "container check: no apt-get install line in the Containerfile's runtime stage" >&2; exit 1; }

# Packages present in the runtime image: those named, the required ones, and what
# they depend on (Depends and Pre-Depends, recursively, as installed here).
declare -A depends=()
while read -r package list; do
  depends[$package]=$list
done < <(dpkg-query -W -f='${Package}\t${Depends}, ${Pre-Depends}\n' | awk -F'\t' '{
  n = split($2, parts, ",")
  out = ""
  for (i = 1; i <= n; i++) {
    first = parts[i]; sub(/\|.*/, "", first); gsub(/\([^)]*\)/, "", first); gsub(/:any/, "", first); gsub(/ /, "", first)
    if (first != "") out = out " " first
  }
  print $1 out
}')
declare -A present=()
queue=($runtime $(dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" {print $1}'))
while [ ${#queue[@]} -gt 0 ]; do
  package=${queue[0]}
  queue=("${queue[@]:1}")
  [ -n "${present[$package]:-}" ] && continue
  present[$package]=1
  for dependency in ${depends[$package]:-}; do
    [ -z "${present[$dependency]:-}" ] && queue+=("$dependency")
  done
done

missing=0
while read -r library path; do
  case "$path" in
    */lib/swift/linux/*)  # the Swift runtime: linked in by the Containerfile's build
      continue ;;
  esac
  [ -n "$path" ] || continue
  owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(realpath "$path")" 2>/dev/null || true)
  package=${owner%%:*}
  if [ -z "$package" ]; then
    echo "container check: $library ($path) belongs to no Debian package" >&2
    missing=1
  elif [ -z "${present[$package]:-}" ]; then
    echo "container check: $library comes from $package, which the runtime stage does not install (apt-get install: $(echo $runtime))" >&2
    missing=1
  fi
done < <(ldd "$binary" | awk '$2 == "=>" {print $1, $3} $2 != "=>" && $1 ~ /^\// {print $1, $1}')
[ $missing -eq 0 ] || exit 1
echo "container check: the runtime stage provides every library of $(basename "$binary") (apt-get install: $(echo $runtime))" >&2
