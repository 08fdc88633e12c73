#!/usr/bin/env bash
# Regenerates docs/jgmirror.1 from the command definitions with swift-argument-parser's
# generate-manual plugin. With --check, fails when the committed page is stale (the
# .Dd date line aside) instead of writing it.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package --allow-writing-to-package-directory generate-manual --configuration debug >/dev/null
plugin_output=.build/plugins/GenerateManual/outputs/jgmirror/jgmirror.1
# The plugin's EXIT STATUS is the generic "0 on success, >0 on error": it is replaced
# by the binary's own table of exit codes (JGMirror.ExitCode), the one --help shows.
generated=.build/jgmirror.1
table=$("$(swift build --configuration debug --show-bin-path)/jgmirror" --exit-code-table)
{
  sed '/^\.Sh "EXIT STATUS"/,$d' "$plugin_output"
  echo '.Sh "EXIT STATUS"'
  echo '.Bl -tag -width 6n'
  printf '%s\n' "$table" | awk -F '\t' '$1 != "order" { print ".It " $1; print $2 }'
  echo '.El'
  echo '.Pp'
  printf '%s\n' "$table" | awk -F '\t' '$1 == "order" { print $2 }'
  # Whatever the plugin put after EXIT STATUS, kept.
  sed -n '/^\.Sh "EXIT STATUS"/,$p' "$plugin_output" | sed '1d' | sed -n '/^\.Sh /,$p'
} >"$generated"
if [ "${1:-}" = "--check" ]; then
  if ! diff <(grep -v '^\.Dd ' docs/jgmirror.1) <(grep -v '^\.Dd ' "$generated") >/dev/null; then
    echo "docs/jgmirror.1 is stale: run scripts/manpage.sh and commit it" >&2
    diff <(grep -v '^\.Dd ' docs/jgmirror.1) <(grep -v '^\.Dd ' "$generated") | head -20 >&2
    exit 1
  fi
  echo "docs/jgmirror.1 is current" >&2
else
  cp "$generated" docs/jgmirror.1
  echo "wrote docs/jgmirror.1" >&2
fi
