#!/usr/bin/env bash
# The real apt client against an `apt:` mirror (docs/apt.md#checking-with-apt): a small
# signed repository (scripts/apt-repo.sh), served by nginx on loopback, mirrored by
# jgmirror, and read by the real apt-get (scripts/apt-client.sh, with a configuration,
# state and cache of its own: the machine's apt is never touched).
#
#   scripts/apt-check.sh JGMIRROR
#
# Three upstream generations (new versions and a package removed, again, then the same
# packages re-signed), each synced with --delete while an apt reader loops on the
# mirror (`apt-get update` and `apt-get install --download-only`): not one apt failure.
# Then each tampering and failure case: a .deb whose bytes differ from Packages, an
# InRelease signed by another key, a Packages that differs from Release, a replayed
# older Release (exit 3 each), a pool file the server lacks (exit 1); after each, apt
# reads the mirror without a failure. Prints what it checks; exits 1 on the first
# check that fails. Without nginx, apt-get or Debian's repository tools, it says so and
# exits 0.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/apt-check.sh JGMIRROR" >&2; exit 2; }
jgmirror=$(realpath "$1")
for tool in nginx apt-get dpkg-deb apt-ftparchive gpg gpgv xz python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "apt-check: left out, $tool is missing (sudo apt-get install -y nginx apt-utils gnupg gpgv xz-utils)" >&2
    exit 0
  fi
done

work=$(mktemp -d /tmp/apt-check.XXXXXX)
nginx_pid="" reader_pid=""
cleanup() {
  [ -n "$reader_pid" ] && kill "$reader_pid" 2>/dev/null && wait "$reader_pid" 2>/dev/null
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "apt-check: FAILED: $*" >&2; exit 1; }

# --- the upstream and the mirror, served by one nginx -----------------------------
upstream=$work/upstream
scripts/apt-repo.sh create "$upstream" --packages 12 --size 24 >/dev/null
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
up_port=$(free_port) mirror_port=$(free_port)
mkdir -p "$work/nginx/logs" "$work/nginx/tmp" "$work/tree"
# The upstream at 64 KiB/s a request, so that each sync lasts while the reader reads.
cat >"$work/nginx/nginx.conf" <<EOF
$([ "$(id -u)" -eq 0 ] && echo "user root root;")
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 256; }
http {
  default_type application/octet-stream;
  access_log off;
  client_body_temp_path $work/nginx/tmp/body;
  proxy_temp_path $work/nginx/tmp/proxy;
  fastcgi_temp_path $work/nginx/tmp/fastcgi;
  uwsgi_temp_path $work/nginx/tmp/uwsgi;
  scgi_temp_path $work/nginx/tmp/scgi;
  server { listen 127.0.0.1:$up_port; root $upstream/repo; limit_rate 64k; }
  server {
    listen 127.0.0.1:$mirror_port; root $work/tree/debian;
    location ~ /\.jgmirror(/|$) { deny all; }
    location ~ \.(jgpart|jgd|jgbad)$ { deny all; }
  }
}
EOF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
nginx_pid=$!
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $mirror_port), 0.2)" 2>/dev/null && break
  kill -0 "$nginx_pid" 2>/dev/null || fail "nginx did not start: $(cat "$work/nginx/logs/error.log")"
  sleep 0.1
done

cat >"$work/debian.yaml" <<EOF
version: 1
root: tree
sets:
  - apt: http://127.0.0.1:$up_port/
    suites: [testing]
    components: [main, contrib]
    architectures: [amd64]
    keyring: $upstream/keyring.gpg
    dest: debian/
    sources: true
EOF
mirror=http://127.0.0.1:$mirror_port/

# Reads the mirror as a client does: update, then install (download only) three
# packages, download every package the indexes name, and one source package.
read_mirror() {
  scripts/apt-client.sh "$mirror" "$upstream/keyring.gpg" --install "jgtest001 jgtest002 jgtest004" --download-all \
    --source jgtest001 >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; return 1; }
}

# Runs `jgmirror sync` (extra arguments after the expected exit code) while a reader
# loops on the mirror; fails on another exit code or on any apt failure during it.
sync_while_reading() {
  local expected=$1 status=0 failures
  shift
  : >"$work/reader.failures"
  rm -f "$work/reader.stop"
  (
    runs=0
    while [ ! -e "$work/reader.stop" ] || [ "$runs" -eq 0 ]; do
      scripts/apt-client.sh "$mirror" "$upstream/keyring.gpg" --install "jgtest001 jgtest002 jgtest004" \
        >"$work/reader.log" 2>&1 || cat "$work/reader.log" >>"$work/reader.failures"
      runs=$((runs + 1))
    done
    echo "$runs" >"$work/reader.runs"
  ) &
  reader_pid=$!
  "$jgmirror" sync "$work/debian.yaml" --progress none --quiet --report "$work/report.json" "$@" || status=$?
  touch "$work/reader.stop"
  wait "$reader_pid" || true
  reader_pid=""
  [ "$status" -eq "$expected" ] || fail "sync exited $status, expected $expected: $(head -c 2000 "$work/report.json")"
  failures=$(grep -c '^apt-client.sh:' "$work/reader.failures" || true)
  [ "$failures" -eq 0 ] || fail "$failures apt failures while syncing: $(cat "$work/reader.failures")"
  echo "apt-check: sync exit $status, $(cat "$work/reader.runs") apt runs during it, 0 failures"
}

# Whether the last report has an item with this status or error code.
report_has() {
  python3 - "$work/report.json" "$1" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
sys.exit(0 if any(sys.argv[2] in (item["status"], (item.get("error") or {}).get("code")) for item in items) else 1)
PY
}

# --- generations ---------------------------------------------------------------------
"$jgmirror" sync "$work/debian.yaml" --progress none --quiet || fail "the first sync exited $?"
read_mirror || fail "apt cannot read the first mirror"
echo "apt-check: generation 1 mirrored; apt reads it"
for change in next next resign; do
  scripts/apt-repo.sh "$change" "$upstream" >/dev/null
  sync_while_reading 0 --delete
  read_mirror || fail "apt cannot read the mirror after '$change'"
done
report_has kept_removed || fail "no file of the removed packages was kept for its grace period"

# --- tampering and failure upstream: nothing new visible to apt ------------------------
expect_refused() {
  local expected=$1 code=$2 what=$3
  shift 3
  sync_while_reading "$expected"
  report_has "$code" || fail "$what: no $code in the report"
  read_mirror || fail "apt cannot read the mirror after $what"
  echo "apt-check: $what refused ($code, exit $expected); apt reads the previous release"
}
# The package a generation added: its .deb is new to the mirror.
newest() { scripts/apt-repo.sh show "$upstream" | tail -n 1 | cut -d' ' -f1; }
scripts/apt-repo.sh next "$upstream" >/dev/null
added=$(newest)
deb=$(find "$upstream/repo/pool" -name "${added}_*.deb" | head -n 1)
cp -p "$deb" "$work/deb.saved"
scripts/apt-repo.sh tamper "$upstream" "$added" >/dev/null
expect_refused 3 checksum_mismatch "a .deb whose bytes differ from Packages"
[ -z "$(find "$work/tree/debian/pool" -name "${added}_*.deb")" ] || fail "the tampered .deb is in the served tree"
[ -n "$(find "$work/tree/.jgmirror/quarantine" -name "${added}_*.deb")" ] || fail "the tampered .deb is not quarantined"
cp -p "$work/deb.saved" "$deb"
sync_while_reading 0

scripts/apt-repo.sh other-key "$upstream" >/dev/null
expect_refused 3 signature "an InRelease signed by another key"
# A new generation whose Packages differs from its Release. (An index the mirror keeps
# with the hash Release gives it is not asked again: tampering with bytes the mirror
# holds already verified changes nothing it serves.)
scripts/apt-repo.sh next "$upstream" >/dev/null
scripts/apt-repo.sh tamper-index "$upstream" >/dev/null
expect_refused 3 checksum_mismatch "a Packages that differs from Release"
scripts/apt-repo.sh resign "$upstream" >/dev/null
sync_while_reading 0
scripts/apt-repo.sh replay "$upstream" >/dev/null
expect_refused 3 stale_release "a replayed older Release"
scripts/apt-repo.sh resign "$upstream" >/dev/null
sync_while_reading 0

scripts/apt-repo.sh next "$upstream" >/dev/null
gone=$(find "$upstream/repo/pool" -name "$(newest)_*.deb" | head -n 1)
mv "$gone" "$work/gone.deb"
expect_refused 1 http_404 "a pool file the server lacks"
mv "$work/gone.deb" "$gone"
sync_while_reading 0
read_mirror || fail "apt cannot read the mirror at the end"
echo "apt-check: passed"
