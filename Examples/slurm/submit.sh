#!/usr/bin/env bash
# Submits a mirror run as a Slurm job array of SHARDS tasks and its merge job;
# prints the two job IDs (array, merge).
#
#   Examples/slurm/submit.sh MANIFEST ROOT REPORTS [SHARDS] [jgmirror sync options…]
#
# MANIFEST, ROOT and REPORTS must be on a file system every node sees. jgmirror must
# be on the PATH of the nodes (sbatch passes this shell's environment on).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 MANIFEST ROOT REPORTS [SHARDS] [jgmirror sync options…]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
manifest=$(realpath "$1") root=$(realpath -m "$2") reports=$(realpath -m "$3")
shards=${4:-4}
if ! [[ $shards =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: SHARDS must be a whole number of at least 1, not '$shards'" >&2
  exit 2
fi
shift $(($# < 4 ? $# : 4))
mkdir -p "$root" "$reports"
array=$(sbatch --parsable --array=0-$((shards - 1)) --output="$reports/slurm-%A_%a.out" \
  "$here/mirror-array.sh" "$manifest" "$root" "$reports" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterany:$array" --output="$reports/slurm-%j-merge.out" \
  "$here/merge.sh" "$reports")
merge=${merge%%;*}
echo "$array $merge"
