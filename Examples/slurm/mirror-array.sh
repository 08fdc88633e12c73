#!/usr/bin/env bash
# One task of a Slurm job array: shard I of N of one manifest into one shared tree.
# `--shard auto` reads SLURM_ARRAY_TASK_ID and the array's MIN/MAX/COUNT/STEP, so
# --array=0-3, --array=1-4 and --array=0-6:2 all give shards 0/4 … 3/4.
#
#   sbatch --array=0-3 mirror-array.sh MANIFEST ROOT REPORTS   (or use submit.sh)
#
# The report is named after the task only: a requeued task overwrites the report of
# its killed attempt, so REPORTS holds one report per shard. A task that is killed
# (scancel, node failure, time limit) saves its part files, and its requeued run
# resumes from them.
#SBATCH --job-name=jgmirror
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: sbatch --array=0-3 $0 MANIFEST ROOT REPORTS [jgmirror sync options…]" >&2
  exit 2
fi
manifest=$1 root=$2 reports=$3
shift 3
# JGMIRROR_SHARD_HEADER=NAME sends "NAME: <task>" with every request, so that the
# origin's access log can tell the shards apart.
if [ -n "${JGMIRROR_SHARD_HEADER:-}" ]; then
  set -- "$@" --header "$JGMIRROR_SHARD_HEADER: $SLURM_ARRAY_TASK_ID"
fi
# exec: scancel's SIGTERM reaches jgmirror, which saves its resume state and writes
# its report (exit 130) before Slurm's KillWait runs out.
exec jgmirror sync "$manifest" --shard auto --root "$root" --progress lines \
  --report "$reports/report-$SLURM_ARRAY_TASK_ID.json" "$@"
