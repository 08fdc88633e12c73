#!/usr/bin/env bash
# Reads an apt mirror with the real apt: `apt-get update`, then downloads packages,
# with a configuration, state, cache and sources list of its own in a temporary
# folder. The machine's apt (its /etc/apt, lists, cache, keys and dpkg status) is
# never read for sources or keys and never written.
#
#   scripts/apt-client.sh URL KEYRING [options]
#     URL                 the repository's base (it holds dists/ and pool/)
#     KEYRING             the archive key, binary or armored (apt's signed-by=)
#     --suite NAME        default testing
#     --components "A B"  default "main contrib"
#     --arch ARCH         default amd64
#     --install "P Q"     apt-get install --download-only these (with their dependencies)
#     --download "P Q"    apt-get download these
#     --download-all      apt-get download every package the mirror's indexes name
#     --source "P Q"      apt-get source --download-only these (adds a deb-src line)
#     --keep DIR          keep the private folder in DIR (default: a temporary one, removed)
#     --held DIR          no `apt-get update`: read the indexes an earlier run kept with
#                         --keep DIR, as a client that updated then and installs now does
#
# Exits 0 when every apt command succeeded and printed neither an error (E:) nor a
# warning (W:), such as a signature, a hash, a size or a missing file; otherwise it
# prints apt's lines and exits 1. Exit 2: wrong usage.
set -euo pipefail
export LC_ALL=C

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
url=$1 keyring=$(realpath "$2")
shift 2
suite=testing components="main contrib" arch=amd64 install="" download="" download_all=0 source="" keep="" held=""
while [ $# -gt 0 ]; do
  case $1 in
    --suite) suite=$2; shift 2 ;;
    --components) components=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --install) install=$2; shift 2 ;;
    --download) download=$2; shift 2 ;;
    --download-all) download_all=1; shift ;;
    --source) source=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --held) held=$2; shift 2 ;;
    *) usage ;;
  esac
done
command -v apt-get >/dev/null || { echo "apt-client.sh: needs apt-get" >&2; exit 2; }

if [ -n "$held" ]; then
  [ -f "$held/apt.conf" ] || { echo "apt-client.sh: $held holds no folder kept with --keep" >&2; exit 2; }
  private=$(realpath "$held")
elif [ -n "$keep" ]; then
  private=$(realpath -m "$keep")
  rm -rf "$private"
  mkdir -p "$private"
else
  private=$(mktemp -d /tmp/apt-client.XXXXXX)
  trap 'rm -rf "$private"' EXIT
fi
# The private folder: a sources list, and a configuration that points apt at it.
make_private() {
  mkdir -p "$private"/{etc/apt.conf.d,etc/sources.list.d,etc/preferences.d,etc/trusted.gpg.d,state/lists/partial} \
    "$private"/{cache/archives/partial,log,downloads}
  : >"$private/state/status"
  options="[signed-by=$keyring arch=$arch]"
  echo "deb $options $url $suite $components" >"$private/etc/sources.list"
  [ -n "$source" ] && echo "deb-src $options $url $suite $components" >>"$private/etc/sources.list"

  # APT_CONFIG is read before anything else; it points every other configuration file
  # and folder into the private one, so nothing of the machine's apt.conf.d applies.
  cat >"$private/apt.conf" <<EOF
Dir::Etc "$private/etc";
Dir::Etc::main "$private/etc/apt.conf";
Dir::Etc::parts "$private/etc/apt.conf.d";
Dir::Etc::sourcelist "$private/etc/sources.list";
Dir::Etc::sourceparts "$private/etc/sources.list.d";
Dir::Etc::preferences "$private/etc/preferences";
Dir::Etc::preferencesparts "$private/etc/preferences.d";
Dir::Etc::trusted "$private/etc/trusted.gpg";
Dir::Etc::trustedparts "$private/etc/trusted.gpg.d";
Dir::State "$private/state";
Dir::State::status "$private/state/status";
Dir::Cache "$private/cache";
Dir::Log "$private/log";
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
// The private folders belong to whoever runs this; apt's download user could not write them.
APT::Sandbox::User "$(id -un)";
Debug::NoLocking "true";
Acquire::Retries "0";
Acquire::Languages { "en"; };
EOF
  : >"$private/etc/apt.conf"
}
if [ -z "$held" ]; then make_private; fi
export APT_CONFIG=$private/apt.conf

failed=0
# Runs one apt command in the download folder; fails on its exit code or on any E:/W: line.
run() {
  local output status=0
  output=$(cd "$private/downloads" && "$@" 2>&1) || status=$?
  if [ "$status" -ne 0 ] || grep -qE '^(E|W): ' <<<"$output"; then
    echo "apt-client.sh: '$*' failed (exit $status):" >&2
    grep -E '^(E|W|Err):? ' <<<"$output" >&2 || echo "$output" >&2
    failed=1
    return 1
  fi
}

if [ -z "$held" ]; then
  run apt-get -q update || exit 1
fi
if [ -n "$install" ]; then
  # shellcheck disable=SC2086
  run apt-get -q -y --download-only install $install || true
fi
if [ "$download_all" = 1 ]; then
  download="$download $(apt-cache dumpavail | sed -n 's/^Package: //p' | sort -u | tr '\n' ' ')"
fi
if [ -n "${download// /}" ]; then
  # shellcheck disable=SC2086
  run apt-get -q download $download || true
fi
if [ -n "$source" ]; then
  # shellcheck disable=SC2086
  run apt-get -q --download-only source $source || true
fi
exit "$failed"
