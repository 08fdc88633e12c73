#!/usr/bin/env bash
# Builds a small signed apt repository, and changes it the way an upstream archive
# changes, for the tests and benchmarks of `apt:` sets. Debian's own tools make it:
# dpkg-deb (packages), apt-ftparchive (Packages, Sources, Contents, Translation in
# plain, gzip and xz forms, by-hash copies, Release) and gpg (InRelease, Release.gpg).
#
#   scripts/apt-repo.sh create DIR [options]   generation 1
#   scripts/apt-repo.sh next DIR [options]     the next generation: new versions of a third
#                                              of the packages, one package removed, one
#                                              added, re-signed with a later Date
#       --every N       new versions of every N-th package instead of every third
#       --remove N      removes the last N packages of the list instead of one
#       --add N         adds N packages instead of one
#   scripts/apt-repo.sh resign DIR             the next generation with the same packages: the
#                                              indexes made again from the pool and Release
#                                              re-signed with a later Date (it also undoes
#                                              tamper-index, other-key and replay)
#   scripts/apt-repo.sh tamper DIR [NAME]      other bytes (same size) in one .deb of the pool
#                                              (the first, or the one whose file name starts
#                                              with NAME); the indexes are left as they are
#   scripts/apt-repo.sh tamper-index DIR       other bytes in main/binary-ARCH/Packages.xz,
#                                              after signing: Release no longer matches it
#   scripts/apt-repo.sh other-key DIR          re-signs InRelease and Release.gpg with a key
#                                              that is not in the keyring
#   scripts/apt-repo.sh replay DIR             serves the previous generation's dists/ again:
#                                              an older Release, validly signed
#   scripts/apt-repo.sh show DIR               prints the generation, suite and packages
#
# Options of create (kept for the later commands):
#   --packages N        binary packages (default 12); every 4th is Architecture: all,
#                       every 5th is in contrib, the rest amd64 in main
#   --size KIB          bytes of random payload per package (default 4)
#   --varied            payloads from a quarter of --size to 4 × --size, and 64 × --size for
#                       every 45th package (the 2nd, 47th, …): a few large ones among many small
#   --suite NAME        Suite and Codename (default testing), dists/NAME
#   --architectures "A B"  the binary architectures besides all (default amd64)
#   --valid-for SECONDS Valid-Until SECONDS after signing (default: no Valid-Until);
#                       negative: a Release that has expired already
#   --no-sources        no source packages and no Sources indexes
#   --no-by-hash        neither Acquire-By-Hash nor by-hash copies
#   --sha512            SHA512 sections in Release too (apt then asks for by-hash/SHA512)
#
# DIR holds repo/ (what a server serves: dists/ and pool/), keyring.gpg (the binary
# public key apt's signed-by= and jgmirror's keyring: take), keyring.asc (armored),
# and private folders: .gnupg and .other-gnupg (throwaway keys), .work (state and the
# signed dists/ of each generation, for replay).
set -euo pipefail
export LC_ALL=C TZ=UTC

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "apt-repo.sh: $*" >&2; exit 1; }
for tool in dpkg-deb apt-ftparchive gpg xz gzip; do
  command -v "$tool" >/dev/null || die "needs $tool (Debian packages dpkg, apt-utils, gnupg, xz-utils)"
done

[ $# -ge 2 ] || usage
command=$1 dir=$(realpath -m "$2")
shift 2
work=$dir/.work

# --- settings, stored by create and read back by every later command -------------------
packages=12 size=4 varied=0 suite=testing architectures=amd64 valid_for="" sources=1 by_hash=1 sha512=0
load_settings() {
  [ -f "$work/settings" ] || die "$dir holds no repository made by this script (run create first)"
  # shellcheck source=/dev/null
  . "$work/settings"
}
save_settings() {
  {
    echo "packages=$packages size=$size varied=$varied suite=$suite valid_for='$valid_for'"
    echo "architectures='$architectures' sources=$sources by_hash=$by_hash sha512=$sha512"
  } >"$work/settings"
}

# --- the throwaway keys ---------------------------------------------------------------
# gpg keeps its daemons' sockets in the home folder, whose path may be too long for a
# socket: each command works on a copy in a short temporary folder and stops gpg's
# daemons there when it ends.
homes=()
cleanup() {
  for home in "${homes[@]}"; do
    gpgconf --homedir "$home" --kill all 2>/dev/null || true
    rm -rf "$home"
  done
}
trap cleanup EXIT
# Sets $home to a short working copy of the key folder $1 (made with a new key when it
# does not exist). Not in a $(…) subshell: the copy must be in this shell's $homes,
# or nothing would remove it and stop gpg's daemons there.
key_home() {
  local stored=$1
  home=$(mktemp -d /tmp/aptkey.XXXXXX)
  homes+=("$home")
  if [ -d "$stored" ]; then
    cp -a "$stored/." "$home/"
  else
    gpg --homedir "$home" --batch --quiet --passphrase '' \
      --quick-gen-key "jgmirror test archive $(basename "$stored") <archive@example.invalid>" ed25519 sign never 2>/dev/null
    mkdir -p "$stored"
    cp -a "$home/." "$stored/"
    rm -rf "$stored"/S.* "$stored"/*.lock
  fi
}

# Signs repo/dists/SUITE/Release with the key in folder $1: InRelease and Release.gpg.
sign() {
  local home release=$dir/repo/dists/$suite
  key_home "$1"
  rm -f "$release/InRelease" "$release/Release.gpg"
  gpg --homedir "$home" --batch --quiet --yes --digest-algo SHA512 --clearsign -o "$release/InRelease" "$release/Release"
  gpg --homedir "$home" --batch --quiet --yes --digest-algo SHA512 -abs -o "$release/Release.gpg" "$release/Release"
}

# --- packages ------------------------------------------------------------------------
# The package list lives in .work/packages, one "NAME VERSION ARCH COMPONENT" a line.
component_of() { if [ $(($1 % 5)) -eq 0 ]; then echo contrib; else echo main; fi; }
arch_of() { if [ $(($1 % 4)) -eq 0 ]; then echo all; else echo any; fi; }
# The payload of package number $1 in KiB: --size, or with --varied spread around it.
size_of() {
  if [ "$varied" = 0 ]; then echo "$size"
  elif [ $(($1 % 45)) -eq 2 ]; then echo $((size * 64))
  else echo $(((size * (1 + ($1 * 37) % 16) + 3) / 4)); fi
}

# Builds NAME VERSION ARCH COMPONENT into the pool: its .deb(s) and, with sources, a
# native source package (.dsc + .tar.xz).
build_package() {
  local name=$1 version=$2 arch=$3 component=$4 scratch targets pool kib
  kib=$(size_of $((10#${name#jgtest})))
  pool=$dir/repo/pool/$component/${name:0:1}/$name
  mkdir -p "$pool"
  scratch=$(mktemp -d "$work/build.XXXXXX")
  if [ "$arch" = all ]; then targets=all; else targets=$architectures; fi
  for target in $targets; do
    rm -rf "$scratch/root"
    mkdir -p "$scratch/root/DEBIAN" "$scratch/root/usr/share/$name"
    head -c $((kib * 1024)) /dev/urandom >"$scratch/root/usr/share/$name/data"
    printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: Test <test@example.invalid>\n' \
      "$name" "$version" "$target" >"$scratch/root/DEBIAN/control"
    printf 'Section: misc\nPriority: optional\nDescription: test package %s\n payload of %s KiB.\n' \
      "$name" "$kib" >>"$scratch/root/DEBIAN/control"
    dpkg-deb --root-owner-group -Zgzip -z1 --build "$scratch/root" "$pool/${name}_${version}_${target}.deb" >/dev/null
  done
  if [ "$sources" = 1 ]; then
    local tarball=${name}_${version}.tar.xz
    mkdir -p "$scratch/src/$name-$version"
    echo "$name $version" >"$scratch/src/$name-$version/README"
    tar -C "$scratch/src" --owner=0 --group=0 --mtime=@0 -cJf "$pool/$tarball" "$name-$version"
    local bytes sha md5
    bytes=$(stat -c %s "$pool/$tarball")
    sha=$(sha256sum "$pool/$tarball" | cut -d' ' -f1)
    md5=$(md5sum "$pool/$tarball" | cut -d' ' -f1)
    cat >"$pool/${name}_${version}.dsc" <<EOF
Format: 3.0 (native)
Source: $name
Binary: $name
Architecture: $arch
Version: $version
Maintainer: Test <test@example.invalid>
Standards-Version: 4.6.2
Package-List:
 $name deb misc optional arch=$arch
Checksums-Sha256:
 $sha $bytes $tarball
Files:
 $md5 $bytes $tarball
EOF
  fi
  rm -rf "$scratch"
}

# Removes every file of package NAME VERSION from the pool.
remove_package() {
  local name=$1 version=$2 component=$3
  rm -f "$dir/repo/pool/$component/${name:0:1}/$name/${name}_${version}"[_.]*
  rmdir "$dir/repo/pool/$component/${name:0:1}/$name" 2>/dev/null || true
}

# --- indexes ---------------------------------------------------------------------------
# The indexes of dists/SUITE from the pool, then Release, signed with the archive key.
index() {
  local generation=$1 dists=$dir/repo/dists/$suite archs
  archs="$architectures all"
  [ "$sources" = 1 ] && archs="$archs source"
  mkdir -p "$work/cache"
  for component in main contrib; do
    for arch in $architectures all; do mkdir -p "$dists/$component/binary-$arch"; done
    mkdir -p "$dists/$component/i18n"
    [ "$sources" = 1 ] && mkdir -p "$dists/$component/source"
  done
  cat >"$work/ftparchive.conf" <<EOF
Dir { ArchiveDir "$dir/repo"; CacheDir "$work/cache"; };
Default { Packages::Compress ". gzip xz"; Sources::Compress ". gzip xz"; Contents::Compress "gzip";
          Translation::Compress ". gzip xz"; };
TreeDefault { Directory "pool/\$(SECTION)"; SrcDirectory "pool/\$(SECTION)";
              Packages "\$(DIST)/\$(SECTION)/binary-\$(ARCH)/Packages";
              Sources "\$(DIST)/\$(SECTION)/source/Sources";
              Contents "\$(DIST)/\$(SECTION)/Contents-\$(ARCH)";
              Translation "\$(DIST)/\$(SECTION)/i18n/Translation-en"; };
Tree "dists/$suite" { Sections "main contrib"; Architectures "$archs"; LongDescription "false"; };
EOF
  local hashes=(-o APT::FTPArchive::MD5=true -o APT::FTPArchive::SHA1=false -o APT::FTPArchive::SHA256=true)
  if [ "$sha512" = 1 ]; then hashes+=(-o APT::FTPArchive::SHA512=true); else hashes+=(-o APT::FTPArchive::SHA512=false); fi
  (cd "$dir/repo" && apt-ftparchive -q=2 "${hashes[@]}" generate "$work/ftparchive.conf")
  # The per-component Release files debmirror and older apt read.
  for component in main contrib; do
    for arch in $architectures all; do
      printf 'Archive: %s\nComponent: %s\nArchitecture: %s\n' "$suite" "$component" "$arch" \
        >"$dists/$component/binary-$arch/Release"
    done
    [ "$sources" = 1 ] && printf 'Archive: %s\nComponent: %s\nArchitecture: source\n' "$suite" "$component" \
      >"$dists/$component/source/Release"
  done
  # Each generation's Date is later than the one before, even within one second.
  local now last epoch
  now=$(date +%s)
  last=$(cat "$work/date" 2>/dev/null || echo 0)
  epoch=$((now > last ? now : last + 1))
  echo "$epoch" >"$work/date"
  local fields=(
    -o APT::FTPArchive::Release::Origin=jgmirror-test -o APT::FTPArchive::Release::Label=jgmirror-test
    -o APT::FTPArchive::Release::Suite="$suite" -o APT::FTPArchive::Release::Codename="$suite"
    -o APT::FTPArchive::Release::Version="$generation" -o APT::FTPArchive::Release::Components="main contrib"
    -o APT::FTPArchive::Release::Architectures="$architectures all" -o APT::FTPArchive::Release::Description="generation $generation"
    -o APT::FTPArchive::Release::Date="$(date -u -d "@$epoch" '+%a, %d %b %Y %H:%M:%S UTC')"
  )
  # `release` itself links each file it lists into by-hash/, and keeps the copies of
  # the last By-Hash-Keep generations, as a real archive does.
  [ "$by_hash" = 1 ] && fields+=(-o APT::FTPArchive::Release::Acquire-By-Hash=yes
    -o APT::FTPArchive::DoByHash=true -o APT::FTPArchive::By-Hash-Keep=3)
  # apt-ftparchive ignores a Valid-Until given as is; ValidTime counts from the time it runs.
  [ -n "$valid_for" ] && fields+=(-o APT::FTPArchive::Release::ValidTime="$valid_for")
  rm -f "$dists/Release" "$dists/InRelease" "$dists/Release.gpg"
  (cd "$dists" && apt-ftparchive -q=2 "${hashes[@]}" "${fields[@]}" release . >"$work/Release.new")
  mv "$work/Release.new" "$dists/Release"
  sign "$dir/.gnupg"
  echo "$generation" >"$work/generation"
  rm -rf "$work/history/$generation"
  mkdir -p "$work/history/$generation"
  cp -a "$dists" "$work/history/$generation/dists"
}

# --- commands ------------------------------------------------------------------------
create() {
  while [ $# -gt 0 ]; do
    case $1 in
      --packages) packages=$2; shift 2 ;;
      --size) size=$2; shift 2 ;;
      --varied) varied=1; shift ;;
      --suite) suite=$2; shift 2 ;;
      --architectures) architectures=$2; shift 2 ;;
      --valid-for) valid_for=$2; shift 2 ;;
      --no-sources) sources=0; shift ;;
      --no-by-hash) by_hash=0; shift ;;
      --sha512) sha512=1; shift ;;
      *) usage ;;
    esac
  done
  [[ $packages =~ ^[1-9][0-9]*$ && $size =~ ^[0-9]+$ ]] || die "--packages and --size take numbers"
  [[ -z $valid_for || $valid_for =~ ^-?[0-9]+$ ]] || die "--valid-for takes seconds"
  [ ! -e "$dir/repo" ] || die "$dir/repo exists already"
  mkdir -p "$dir/repo/pool/main" "$dir/repo/pool/contrib" "$work"
  save_settings
  : >"$work/packages"
  for i in $(seq 1 "$packages"); do
    local name version=1.1 arch component
    name=$(printf 'jgtest%03d' "$i") arch=$(arch_of "$i") component=$(component_of "$i")
    build_package "$name" "$version" "$arch" "$component"
    echo "$name $version $arch $component" >>"$work/packages"
  done
  echo "$packages" >"$work/last-number"
  local home
  key_home "$dir/.gnupg"
  gpg --homedir "$home" --batch --quiet --export >"$dir/keyring.gpg"
  gpg --homedir "$home" --batch --quiet --export --armor >"$dir/keyring.asc"
  index 1
}

next() {
  local every=3 remove=1 add=1
  while [ $# -gt 0 ]; do
    case $1 in
      --every) every=$2; shift 2 ;;
      --remove) remove=$2; shift 2 ;;
      --add) add=$2; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ $every =~ ^[1-9][0-9]*$ && $remove =~ ^[0-9]+$ && $add =~ ^[0-9]+$ ]] ||
    die "--every, --remove and --add take numbers"
  load_settings
  local generation
  generation=$(($(cat "$work/generation") + 1))
  local i=0 line name version arch component
  : >"$work/packages.new"
  local count
  count=$(wc -l <"$work/packages")
  # The last packages of the list go, as long as one is left.
  [ "$remove" -lt "$count" ] || remove=$((count - 1))
  while read -r name version arch component; do
    i=$((i + 1))
    if [ "$i" -gt $((count - remove)) ]; then
      remove_package "$name" "$version" "$component"
      continue
    fi
    if [ $((i % every)) -eq $((generation % every)) ]; then
      remove_package "$name" "$version" "$component"
      version=1.$generation
      build_package "$name" "$version" "$arch" "$component"
    fi
    echo "$name $version $arch $component" >>"$work/packages.new"
  done <"$work/packages"
  # New packages, numbered after every earlier one.
  local number
  number=$(cat "$work/last-number")
  for _ in $(seq 1 "$add"); do
    number=$((number + 1))
    name=$(printf 'jgtest%03d' "$number") arch=$(arch_of "$number") component=$(component_of "$number")
    build_package "$name" "1.$generation" "$arch" "$component"
    echo "$name 1.$generation $arch $component" >>"$work/packages.new"
  done
  echo "$number" >"$work/last-number"
  mv "$work/packages.new" "$work/packages"
  index "$generation"
}

resign() {
  [ $# -eq 0 ] || usage
  load_settings
  # apt-ftparchive leaves an index whose contents it finds unchanged, and with it the
  # bytes tamper-index wrote: every index is made afresh.
  find "$dir/repo/dists/$suite" -path '*/by-hash' -prune -o -type f \( -name 'Packages*' -o -name 'Sources*' \
    -o -name 'Translation-*' -o -name 'Contents-*' \) -exec rm -f {} +
  index $(($(cat "$work/generation") + 1))
}

tamper() {
  load_settings
  local deb
  deb=$(find "$dir/repo/pool" -name "${1:-}*.deb" -type f | sort | head -n 1)
  [ -n "$deb" ] || die "no .deb matches '${1:-}'"
  local bytes
  bytes=$(stat -c %s "$deb")
  # The same length, other bytes: only the hash can tell.
  printf 'TAMPERED' | dd of="$deb" bs=1 seek=$((bytes / 2)) conv=notrunc status=none
  echo "$deb"
}

tamper_index() {
  load_settings
  local arch=${architectures%% *} file
  file=$dir/repo/dists/$suite/main/binary-$arch/Packages.xz
  [ -f "$file" ] || die "no $file"
  local tampered original
  tampered=$(mktemp "$work/tamper.XXXXXX")
  original=$(sha256sum "$file" | cut -d' ' -f1)
  xz -dc "$file" | sed '0,/^Description:/s//Description: TAMPERED/' | xz -c >"$tampered"
  # Its by-hash copy too, which is what apt asks for under Acquire-By-Hash.
  local copy=${file%/*}/by-hash/SHA256/$original
  [ -f "$copy" ] && cp "$tampered" "$copy" && echo "$copy"
  mv "$tampered" "$file"
  echo "$file"
}

other_key() {
  load_settings
  sign "$dir/.other-gnupg"
}

replay() {
  load_settings
  local generation
  generation=$(cat "$work/generation")
  [ "$generation" -gt 1 ] || die "generation 1 has no earlier one to replay"
  rm -rf "$dir/repo/dists/$suite"
  cp -a "$work/history/$((generation - 1))/dists" "$dir/repo/dists/$suite"
}

show() {
  load_settings
  echo "generation $(cat "$work/generation"), suite $suite, architectures $architectures all"
  cat "$work/packages"
}

case $command in
  create) create "$@" ;;
  next) next "$@" ;;
  resign) resign "$@" ;;
  tamper) tamper "$@" ;;
  tamper-index) tamper_index ;;
  other-key) other_key ;;
  replay) replay ;;
  show) show ;;
  *) usage ;;
esac
