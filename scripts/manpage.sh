#!/usr/bin/env bash
# Regenerates docs/jgmirror.1 from the command definitions with swift-argument-parser's
# generate-manual plugin. With --check, fails when the committed page is stale (the
# .Dd date line aside) instead of writing it.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package --allow-writing-to-package-directory generate-manual --configuration debug >/dev/null
generated=.build/plugins/GenerateManual/outputs/jgmirror/jgmirror.1
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
