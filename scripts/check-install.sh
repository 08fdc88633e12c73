#!/usr/bin/env bash
# Checks that the committed man page is current and that `make install PREFIX=…`
# puts the binary, the man page and the three completion scripts in place.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/manpage.sh --check
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
make --no-print-directory install PREFIX="$prefix" CONFIG=debug >/dev/null
fail() { echo "install check: $*" >&2; exit 1; }
"$prefix/bin/jgmirror" --version >/dev/null || fail "installed binary does not run"
cmp -s docs/jgmirror.1 "$prefix/share/man/man1/jgmirror.1" || fail "man page not installed"
grep -q "EXIT CODES" "$prefix/share/man/man1/jgmirror.1" || fail "man page lacks the exit codes"
for file in share/bash-completion/completions/jgmirror share/zsh/site-functions/_jgmirror \
  share/fish/vendor_completions.d/jgmirror.fish; do
  grep -q "metrics" "$prefix/$file" || fail "$file missing or without the sync options"
done
bash -n "$prefix/share/bash-completion/completions/jgmirror" || fail "bash completion does not parse"
echo "install check: binary, man page and bash/zsh/fish completions installed" >&2
