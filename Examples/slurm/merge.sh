#!/usr/bin/env bash
# The merge job: runs once every task of the array has ended, however it ended
# (--dependency=afterany), and writes REPORTS/merged.json. Its exit code is the
# whole run's: 1 with "incomplete": true and error shard_missing when a shard has
# no report (a task that never ran, or one whose report was lost).
#
#   sbatch --dependency=afterany:ARRAY_JOB_ID merge.sh REPORTS
#SBATCH --job-name=jgmirror-merge
#SBATCH --ntasks=1
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: sbatch --dependency=afterany:ARRAY_JOB_ID $0 REPORTS" >&2
  exit 2
fi
reports=$1
shopt -s nullglob
shards=("$reports"/report-*.json)
if [ ${#shards[@]} -eq 0 ]; then
  echo "no shard report in $reports" >&2
  exit 1
fi
exec jgmirror report merge "${shards[@]}" -o "$reports/merged.json"
