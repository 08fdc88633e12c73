#!/usr/bin/env bash
# A real Slurm run of Examples/slurm: a four-node cluster on 127.0.0.1 (munge,
# slurmctld, four slurmd), an nginx origin of a few hundred generated files whose
# access log names the shard of each request, the job array and its afterany merge
# job, one task cancelled mid-run and requeued. Then checks every file's SHA-256,
# that every file was asked for by exactly one shard, the merged report's counts,
# and that a merge without one shard's report exits 1 (shard_missing).
#
#   scripts/slurm-check.sh [PATH/TO/jgmirror]     (as root: it starts daemons)
#
# Installs slurmctld, slurmd, slurm-client, munge and nginx when missing. Every
# daemon it starts is stopped by its PID on exit; state lives in a temporary folder
# (kept on failure, KEEP=1 keeps it always).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
jgmirror=$(realpath "${1:-.build/debug/jgmirror}")
files=${FILES:-300}

if [ "$(id -u)" -ne 0 ]; then
  echo "Slurm check left out (it starts munge and slurmd as root); to run it: sudo scripts/slurm-check.sh $jgmirror" >&2
  exit 0
fi
[ -x "$jgmirror" ] || { echo "slurm check: no jgmirror binary at $jgmirror" >&2; exit 1; }
packages=(slurmctld slurmd slurm-client munge nginx python3)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Installing starts no daemon that matters here: this script runs its own.
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1) \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
fi

began=$SECONDS
work=$(mktemp -d -t jgmirror-slurm.XXXXXX)
# Readable by nginx's workers (www-data); munged only needs its socket folder unwritable by others.
chmod 755 "$work"
pids=()
failed=1
array="" merge=""

stop() {
  local pid
  # Jobs first, so that no task outlives the cluster (their processes are slurmd's,
  # not this script's): cancelled, and given a few seconds to end.
  if [ -n "${array:-}" ]; then
    scancel "$array" "${merge:-}" 2>/dev/null || true
    for _ in $(seq 50); do [ -z "$(squeue -h -j "$array${merge:+,$merge}" 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$failed" -eq 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "slurm check: logs and state kept in $work" >&2; fi
}
trap stop EXIT

fail() {
  echo "slurm check: FAIL: $*" >&2
  for log in "$work"/log/*.log "$work"/reports/*.out; do
    [ -f "$log" ] || continue
    echo "--- last lines of $log" >&2
    tail -n 15 "$log" >&2
  done
  exit 1
}

# `wait_until SECONDS WHAT COMMAND…`: polls COMMAND every 0.2 s, fails after SECONDS.
wait_until() {
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out after ${limit}s waiting for $what"
    sleep 0.2
  done
}

# Ports free now on 127.0.0.1: slurmctld, four slurmd, nginx.
read -r ctld_port n1 n2 n3 n4 http_port < <(python3 - <<'PY'
import socket
sockets = [socket.socket() for _ in range(6)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
PY
)
mkdir -p "$work"/{log,munge,state,spool,www,tree,reports,nginx}
host=$(uname -n)
host=${host%%.*}

# --- origin: files with known digests, a manifest of them, and nginx on loopback.
python3 - "$work" "$files" "$http_port" <<'PY'
import hashlib, os, random, sys
work, count, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(32)
lines = ["version: 1", "items:"]
sums = []
for n in range(count):
    name = f"data/{n % 10}/file-{n:04d}.bin"
    path = os.path.join(work, "www", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = rng.randbytes(rng.randrange(16 << 10, 96 << 10))
    with open(path, "wb") as f:
        f.write(data)
    digest = hashlib.sha256(data).hexdigest()
    lines += [f"  - url: http://127.0.0.1:{port}/{name}", f"    dest: {name}", f"    sha256: {digest}"]
    sums.append(f"{digest}  {name}")
open(os.path.join(work, "site.yaml"), "w").write("\n".join(lines) + "\n")
open(os.path.join(work, "SHA256SUMS"), "w").write("\n".join(sums) + "\n")
PY
cat > "$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/log/nginx-error.log;
events { worker_connections 256; }
http {
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  log_format shard '\$http_x_jgmirror_shard \$request_method \$uri \$status';
  server {
    listen 127.0.0.1:$http_port;
    root $work/www;
    access_log $work/log/access.log shard;
    # Slow enough that a task is still running when it is cancelled.
    limit_rate 128k;
  }
}
CONF
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
pids+=($!)

# --- munge with its own key and socket, so a munged of the machine is left alone.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --foreground --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" \
  >>"$work/log/munged.out" 2>&1 &
pids+=($!)
wait_until 10 "munged's socket" test -S "$work/munge/socket"

# --- a four-node cluster on 127.0.0.1: no systemd, no cgroups.
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=jgmirror-check
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A requeued task waits cred_expire before it may start again (its old credential is
# revoked until then; started earlier, the node kills it): 10 s here, 120 s by default.
AuthInfo=socket=$work/munge/socket,cred_expire=10
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/state/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd-%n.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
# A requeued task becomes eligible when its BeginTime passes; the backfill pass is
# what starts it then, every 30 s by default.
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
MinJobAge=600
SlurmdTimeout=30
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n1 CPUs=1 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n2 CPUs=1 State=UNKNOWN
NodeName=n3 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n3 CPUs=1 State=UNKNOWN
NodeName=n4 NodeHostname=$host NodeAddr=127.0.0.1 Port=$n4 CPUs=1 State=UNKNOWN
PartitionName=check Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$work"/spool/n{1,2,3,4}
slurmctld -D -i -f "$SLURM_CONF" >>"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
wait_until 15 "slurmctld" scontrol ping
for node in n1 n2 n3 n4; do
  slurmd -D -N "$node" -f "$SLURM_CONF" >>"$work/log/slurmd-$node.out" 2>&1 &
  pids+=($!)
done
idle() { [ "$(sinfo -h -N -o '%t' | grep -c '^idle')" -eq 4 ]; }
wait_until 20 "four idle nodes" idle
echo "slurm check: cluster up in $((SECONDS - began))s; origin http://127.0.0.1:$http_port/ ($files files)"

# --- the example, as a user submits it.
export PATH=$(dirname "$jgmirror"):$PATH
export JGMIRROR_SHARD_HEADER=X-JGMirror-Shard
read -r array merge < <("$repo/Examples/slurm/submit.sh" "$work/site.yaml" "$work/tree" "$work/reports" 4 --jobs 2 --connections 1) || true
[ -n "$array" ] && [ -n "$merge" ] || fail "submit.sh printed no job IDs"
echo "slurm check: array job $array, merge job $merge"

state() { squeue -h -j "$1" -o '%T' 2>/dev/null | head -n 1; }
# Cancel task 1 once it has asked the origin for a few files, and requeue it: the
# sequence of docs/scale-out.md#slurm. Slurm holds a requeued
# task until its BeginTime, cred_expire later, and then starts it by itself.
asked() { [ "$(grep -c '^1 ' "$work/log/access.log" 2>/dev/null || true)" -ge "$1" ]; }
wait_until 30 "task 1 to fetch its first files" asked 5
scancel "${array}_1"
ended() { local s; s=$(state "$1"); [ -z "$s" ] || [ "$s" = CANCELLED ] || [ "$s" = COMPLETED ] || [ "$s" = FAILED ]; }
wait_until 20 "task 1 to end after scancel" ended "${array}_1"
scontrol requeue "${array}_1" || fail "scontrol requeue ${array}_1 refused"
pending() { [ "$(state "$1")" = PENDING ]; }
wait_until 20 "task 1 to be pending again" pending "${array}_1"
echo "slurm check: task 1 cancelled after $(grep -c '^1 ' "$work/log/access.log") requests, requeued"

gone() { [ -z "$(state "$1")" ]; }
wait_until 60 "the merge job" gone "$merge"
merge_state=$(scontrol show job "$merge" 2>/dev/null | grep -o 'JobState=[A-Z]*' || true)
[ -f "$work/reports/merged.json" ] || fail "the merge job ($merge_state) wrote no merged report"

# --- checks.
(cd "$work/tree" && sha256sum --quiet -c "$work/SHA256SUMS") || fail "a mirrored file's SHA-256 differs"
python3 - "$work" "$files" <<'PY' || fail "the origin's log or the merged report is wrong"
import collections, json, sys
work, count = sys.argv[1], int(sys.argv[2])
by_file = collections.defaultdict(set)
for line in open(f"{work}/log/access.log"):
    shard, method, uri, status = line.split()
    by_file[uri].add(shard)
problems = []
if len(by_file) != count:
    problems.append(f"the origin saw {len(by_file)} files, not {count}")
shared = {uri: shards for uri, shards in by_file.items() if len(shards) != 1 or "-" in shards}
if shared:
    uri, shards = next(iter(shared.items()))
    problems.append(f"{len(shared)} files not asked for by exactly one shard (e.g. {uri} by {sorted(shards)})")
merged = json.load(open(f"{work}/reports/merged.json"))
totals = merged["totals"]
if merged["exit_code"] != 0 or merged["incomplete"] or merged["missing_shards"]:
    problems.append(f"merged exit {merged['exit_code']}, incomplete {merged['incomplete']}, missing {merged['missing_shards']}")
if totals["items"] != count or totals["downloaded"] + totals["unchanged"] != count or totals["failed"] != 0:
    problems.append(f"merged totals {totals}")
if merged["run"]["shard_count"] != 4 or sorted(a["shard"] for a in merged["attempts"] if a["latest"]) != ["0/4", "1/4", "2/4", "3/4"]:
    problems.append(f"merged run {merged['run']} attempts {merged['attempts']}")
first = json.load(open(f"{work}/reports/report-1.json"))
if first["totals"]["unchanged"] == 0:
    problems.append("the requeued task found none of its cancelled attempt's files")
for problem in problems:
    print("slurm check:", problem, file=sys.stderr)
print(f"slurm check: {count} files, each from one shard; merged: {totals['downloaded']} downloaded, "
      f"{totals['unchanged']} unchanged (the requeued task's earlier files), exit 0")
sys.exit(1 if problems else 0)
PY
set +e
jgmirror report merge "$work"/reports/report-{0,2,3}.json -o "$work/three.json" 2>"$work/log/three.err"
code=$?
set -e
[ "$code" -eq 1 ] || fail "a merge without shard 1 exited $code, not 1"
grep -q '"shard_missing"' "$work/three.json" || fail "a merge without shard 1 does not say shard_missing"
grep -q '"1/4"' "$work/three.json" || fail "a merge without shard 1 does not name it"
failed=0
echo "slurm check: PASS in $((SECONDS - began))s"
