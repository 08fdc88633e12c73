#!/usr/bin/env bash
# Installs the system packages jgmirror builds against, when missing.
# As root it runs apt-get; otherwise it prints the exact command to run.
set -euo pipefail
# gpgv checks signed checksums lists at run time; gnupg makes throwaway keys in the tests.
# liblzma and zlib read apt's compressed indexes; dpkg-dev (dpkg-deb) and apt-utils
# (apt-ftparchive) build the tests' signed apt repository (scripts/apt-repo.sh).
packages=(libcurl4-openssl-dev libyaml-dev libssl-dev libsqlite3-dev liblzma-dev zlib1g-dev pkg-config gpgv gnupg
  dpkg-dev apt-utils)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -eq 0 ]; then
  echo "installing: ${missing[*]}" >&2
  (apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1) || { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; }
else
  echo "jgmirror needs: ${missing[*]}. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
