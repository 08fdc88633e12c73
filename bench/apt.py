"""The apt rows of bench/bench.py (issue 44): jgmirror's `apt:` set side by side with
debmirror and aptly, on one generated signed repository.

scripts/apt-repo.sh builds the repository once under bench/out/apt/: 500 packages
(main and contrib, amd64 and all) of 4–64 KiB each and eleven of 1 MiB, indexes in
plain, gzip and xz forms with by-hash copies, InRelease and Release.gpg; then its next
generation: new versions of every 25th package, three removed and two added (5 % of
the packages), every index made again and Release re-signed. nginx serves it through
bench/linkproxy.py (each TCP connection 2 MB/s, 50 ms round trip) and logs every
request with its status and the bytes of its body. The same nginx serves each tool's
mirror, without the proxy, to the real apt-get (scripts/apt-client.sh) that loops
`update` + `install --download-only` while the tool syncs.

Each round (the tools' order rotates) every tool makes its mirror from nothing
(generation 1), syncs it to generation 2 (incremental), and syncs it once more
(no-op). Per run: wall time and peak RSS; requests and body bytes nginx sent; bytes the
tool placed in the tree it serves; apt runs that failed while it synced; and, for the
incremental sync, one more client that ran `apt-get update` just before the sync and
installs after it (a client that holds the previous indexes).

    bench/run.sh --only apt500
"""

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench import DL, HERE, OUT, LinkProxy, Scenario, Target, Tool, free_port, fresh, measure, ratio_target

KEYS = {"apt500"}
REPO_SCRIPT = HERE.parent / "scripts" / "apt-repo.sh"
CLIENT_SCRIPT = HERE.parent / "scripts" / "apt-client.sh"
DATA = OUT / "apt"  # the two generations, kept between bench runs
WORK = DL / "apt"  # the mirrors, removed when the bench ends
NGINX = OUT / "apt-nginx"
PACKAGES = 500
SIZE_KIB = 16  # apt-repo.sh --varied: 4–64 KiB, and 64 × 16 KiB for every 45th package
CHANGE = ["--every", "25", "--remove", "3", "--add", "2"]  # 20 new versions, 3 removed, 2 added
RATE = 2_000_000  # bytes per second per TCP connection
RTT = 0.05
SUITE = "testing"
# jgtest002 (1 MiB), jgtest027 and jgtest052 (Architecture: all) get new versions in
# generation 2; jgtest010 (contrib) does not.
INSTALL = "jgtest002 jgtest027 jgtest052 jgtest010"
PHASES = ("first", "incremental", "no-op")
QUIET = ["--progress", "none", "--quiet"]


# ---------------------------------------------------------------- the repository


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_of(root: Path) -> dict[str, Path]:
    """Regular files below root by relative path (links are not followed)."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found[str(path.relative_to(root))] = path
    return found


class Upstream:
    """Generations 1 and 2 of the repository, made once (again when apt-repo.sh or the
    settings change), and the one nginx serves at /debian/ (a link switched between runs)."""

    def __init__(self) -> None:
        self.generations = {1: DATA / "gen1", 2: DATA / "gen2"}
        self.keyring = DATA / "keyring.gpg"
        self.make()
        old, new = files_of(self.generations[1]), files_of(self.generations[2])
        # Files of generation 2 that generation 1 lacks or holds with other bytes.
        self.changed = sum(1 for path, file in new.items()
                           if path not in old or digest(file) != digest(old[path]))
        self.pool = {n: {path: file.stat().st_size for path, file in files_of(self.generations[n]).items()
                         if path.startswith("pool/")} for n in (1, 2)}

    def make(self) -> None:
        settings = {"packages": PACKAGES, "size": SIZE_KIB, "change": CHANGE, "script": digest(REPO_SCRIPT)}
        made = DATA / "made.json"
        if made.exists() and json.loads(made.read_text()) == settings:
            return
        print(f"   generating the apt repository ({PACKAGES} packages, two generations)", flush=True)
        shutil.rmtree(DATA, ignore_errors=True)
        source = DATA / "source"
        subprocess.run([str(REPO_SCRIPT), "create", str(source), "--packages", str(PACKAGES), "--size",
                        str(SIZE_KIB), "--varied", "--no-sources"], check=True, stdout=subprocess.DEVNULL)
        shutil.copytree(source / "repo", self.generations[1], symlinks=True)
        subprocess.run([str(REPO_SCRIPT), "next", str(source)] + CHANGE, check=True, stdout=subprocess.DEVNULL)
        shutil.copytree(source / "repo", self.generations[2], symlinks=True)
        shutil.copy(source / "keyring.gpg", self.keyring)
        made.write_text(json.dumps(settings))

    def serve(self, generation: int) -> None:
        served = DATA / "served"
        served.mkdir(exist_ok=True)
        link, next_link = served / "debian", served / ".next"
        next_link.unlink(missing_ok=True)
        next_link.symlink_to(self.generations[generation])
        os.replace(next_link, link)


# ---------------------------------------------------------------- nginx and its log


class Servers:
    """One nginx: the upstream (DATA/served, every request logged with its status and
    body bytes) and each mirror's tree on a port of its own (no log), as
    scripts/apt-check.sh serves a mirror."""

    def __init__(self, mirrors: dict[str, Path]) -> None:
        self.upstream_port = free_port()
        self.ports = {name: free_port() for name in mirrors}
        self.log = NGINX / "logs" / "upstream.log"
        for sub in ("logs", "tmp"):
            (NGINX / sub).mkdir(parents=True, exist_ok=True)
        self.log.write_text("")
        user = "user root root;" if os.geteuid() == 0 else ""
        hidden = (r"location ~ /\.(jgmirror|temp)(/|$) { deny all; } "
                  r"location ~ \.(jgpart|jgd|jgbad)$ { deny all; }")
        servers = "".join(f"  server {{ listen 127.0.0.1:{self.ports[name]}; root {root}; access_log off; "
                          f"{hidden} }}\n" for name, root in mirrors.items())
        config = f"""
{user}
worker_processes 2;
daemon off;
pid {NGINX}/nginx.pid;
error_log {NGINX}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
  default_type application/octet-stream;
  log_format bench '$msec $status $body_bytes_sent "$request"';
  client_body_temp_path {NGINX}/tmp/body;
  proxy_temp_path {NGINX}/tmp/proxy;
  fastcgi_temp_path {NGINX}/tmp/fastcgi;
  uwsgi_temp_path {NGINX}/tmp/uwsgi;
  scgi_temp_path {NGINX}/tmp/scgi;
  sendfile on;
  keepalive_timeout 120s;
  keepalive_requests 1000000;
  server {{ listen 127.0.0.1:{self.upstream_port}; root {DATA / 'served'}; access_log {self.log} bench; }}
{servers}}}
"""
        conf = NGINX / "nginx.conf"
        conf.write_text(config)
        self.process = subprocess.Popen(["nginx", "-p", str(NGINX), "-c", str(conf)], stderr=subprocess.DEVNULL)
        wait_for_port(self.upstream_port, self.process, NGINX / "logs" / "error.log")

    def mark(self) -> int:
        return self.log.stat().st_size

    def since(self, offset: int) -> list[tuple[int, int, str]]:
        """(status, body bytes, request line) of every request logged after offset (each
        line also has the time it ended, for reading a run's timeline by hand)."""
        with open(self.log, "rb") as log:
            log.seek(offset)
            lines = log.read().decode(errors="replace").splitlines()
        parsed = []
        for line in lines:
            match = re.match(r'[\d.]+ (\d+) (\d+) "(.*)"$', line)
            if match:
                parsed.append((int(match[1]), int(match[2]), match[3]))
        return parsed

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    raise RuntimeError(f"nginx did not start; see {log}")


# ---------------------------------------------------------------- apt readers


def read_once(url: str, keyring: Path, *extra: str) -> str:
    """One scripts/apt-client.sh run; '' when apt succeeded, else its first error lines."""
    run = subprocess.run([str(CLIENT_SCRIPT), url, str(keyring), *extra], capture_output=True, text=True,
                         timeout=600)
    if run.returncode == 0:
        return ""
    lines = [line for line in run.stderr.splitlines() if not line.startswith("apt-client.sh:")]
    return " | ".join(lines[:3]) or f"exit {run.returncode}"


class Reader:
    """A real apt client looping on a mirror in a thread: `apt-get update`, then
    `apt-get install --download-only` of INSTALL, again and again until stopped; at
    least one run, and the run in progress when stopped is finished and counted."""

    def __init__(self, url: str, keyring: Path) -> None:
        self.url, self.keyring = url, keyring
        self.stopping = threading.Event()
        self.runs = 0
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while True:
            failure = read_once(self.url, self.keyring, "--install", INSTALL)
            self.runs += 1
            if failure:
                self.failures.append(failure)
            if self.stopping.is_set():
                return

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()


# ---------------------------------------------------------------- the three mirrors


@dataclass
class Mirror:
    """One tool's mirror: how to start it afresh, the command of each sync, the tree
    it serves and the key its Release is signed with."""
    name: str
    served: Path
    keyring: Path
    prepare: Callable[[], None]
    command: Callable[[str], list[str]]


def jgmirror(jg: str, base: str, upstream: Upstream) -> Mirror:
    """`sync --delete` of an `apt:` set with the defaults (8 items in flight, at most 16
    connections to the host, deletions after the 1-day grace period)."""
    root = WORK / "jgmirror"
    manifest = OUT / "manifests" / "apt500.yaml"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(f"version: 1\nroot: {root}\nsets:\n  - apt: {base}\n    suites: [{SUITE}]\n"
                        f"    components: [main, contrib]\n    architectures: [amd64]\n"
                        f"    keyring: {upstream.keyring}\n    dest: debian/\n")
    report = WORK / "jgmirror-report.json"
    return Mirror("jgmirror sync --delete", root / "debian", upstream.keyring, fresh(root),
                  lambda phase: [jg, "sync", str(manifest), "--delete", "--report", str(report)] + QUIET)


def debmirror(port: int, upstream: Upstream) -> Mirror:
    """debmirror over HTTP with the upstream's keyring; the English translations and
    Contents as jgmirror mirrors them; no pdiffs (the archive has none) and no rsync
    extras (the server speaks HTTP only); the state cache, so a run trusts the pool
    files it placed before instead of asking the disk; clean-up after the run (its
    default)."""
    root = WORK / "debmirror"
    home = root / "home"

    def prepare() -> None:
        fresh(root)()
        (home / "gnupg").mkdir(parents=True, mode=0o700)

    command = ["env", f"HOME={home}", f"GNUPGHOME={home / 'gnupg'}", "debmirror", "--method=http",
               f"--host=127.0.0.1:{port}", "--root=debian", f"--dist={SUITE}", "--section=main,contrib",
               "--arch=amd64", "--nosource", f"--keyring={upstream.keyring}", "--diff=none",
               "--rsync-extra=none", "--i18n", "--getcontents", "--state-cache-days=7", str(root / "mirror")]
    return Mirror("debmirror", root / "mirror", upstream.keyring, prepare, lambda phase: command)


class Aptly:
    """aptly: a mirror per component (a snapshot publishes as one component), updated,
    snapshotted and published (`publish snapshot` the first time, `publish switch`
    after) with its own key, by-hash indexes, 8 downloads at once (as many as jgmirror's
    items in flight; aptly's default is 4)."""

    def __init__(self, base: str, upstream: Upstream) -> None:
        self.base, self.upstream = base, upstream
        self.root = WORK / "aptly"
        # The signing key outlives the rounds; a short folder, for gpg-agent's socket.
        self.gnupg = WORK / "aptly-gnupg"
        self.key = WORK / "aptly-key.gpg"

    def make_key(self) -> None:
        if self.key.exists():
            return
        self.gnupg.mkdir(parents=True, mode=0o700)
        gpg = ["gpg", "--homedir", str(self.gnupg), "--batch", "--quiet"]
        subprocess.run(gpg + ["--passphrase", "", "--quick-gen-key", "aptly bench <aptly@example.invalid>",
                              "ed25519", "sign", "never"], check=True, capture_output=True)
        self.key.write_bytes(subprocess.run(gpg + ["--export"], check=True, capture_output=True).stdout)

    def prepare(self) -> None:
        fresh(self.root)()
        self.make_key()
        self.root.mkdir(parents=True)
        (self.root / "aptly.conf").write_text(json.dumps({
            "rootDir": str(self.root), "downloadConcurrency": 8, "architectures": ["amd64", "all"],
            "gpgProvider": "gpg"}))

    def command(self, phase: str) -> list[str]:
        aptly = f"aptly -config={self.root / 'aptly.conf'}"
        keyring = f"-keyring={self.upstream.keyring}"
        steps = []
        if phase == "first":
            steps += [f"{aptly} mirror create {keyring} -architectures=amd64,all up-{c} {self.base} {SUITE} {c}"
                      for c in ("main", "contrib")]
        steps += [f"{aptly} mirror update {keyring} up-{c}" for c in ("main", "contrib")]
        # One snapshot per component and run; the root is new each round.
        snapshots = [f"{phase}-{c}" for c in ("main", "contrib")]
        steps += [f"{aptly} snapshot create {s} from mirror up-{c}" for s, c in zip(snapshots, ("main", "contrib"))]
        publish = "-batch -component=main,contrib"
        if phase == "first":
            steps.append(f"{aptly} publish snapshot {publish} -acquire-by-hash -distribution={SUITE} "
                         + " ".join(snapshots))
        else:
            steps.append(f"{aptly} publish switch {publish} {SUITE} " + " ".join(snapshots))
        script = "set -e\n" + "\n".join(f"{step} >/dev/null" for step in steps)
        return ["env", f"HOME={self.root}", f"GNUPGHOME={self.gnupg}", "sh", "-c", script]

    def mirror(self) -> Mirror:
        return Mirror("aptly (update, snapshot, publish)", self.root / "public", self.key, self.prepare,
                      self.command)

    def stop(self) -> None:
        if self.gnupg.exists():
            subprocess.run(["gpgconf", "--homedir", str(self.gnupg), "--kill", "all"], capture_output=True)


# ---------------------------------------------------------------- the rounds


def tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    """(inode, size, mtime) of each regular file a mirror serves; a tool's own folders
    at its top (jgmirror's .jgmirror/ lies outside, debmirror's .temp/ inside) are left out."""
    state = {}
    for folder, folders, names in os.walk(root):
        if Path(folder) == root:
            folders[:] = [f for f in folders if not f.startswith(".")]
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            if not os.path.islink(os.path.join(folder, name)):
                state[os.path.relpath(os.path.join(folder, name), root)] = (info.st_ino, info.st_size,
                                                                           info.st_mtime_ns)
    return state


class AptBench:
    """The three mirrors, the upstream behind the link, nginx, and the runs of a round."""

    def __init__(self, jg: str, links: list[LinkProxy]) -> None:
        self.upstream = Upstream()
        roots = {"jgmirror": WORK / "jgmirror" / "debian", "debmirror": WORK / "debmirror" / "mirror",
                 "aptly": WORK / "aptly" / "public"}
        self.servers = Servers(roots)
        self.link = LinkProxy(self.servers.upstream_port, RATE, RTT)
        links.append(self.link)
        base = f"{self.link.url()}/debian/"
        self.aptly = Aptly(base, self.upstream)
        self.mirrors = [jgmirror(jg, base, self.upstream), debmirror(self.link.port, self.upstream),
                        self.aptly.mirror()]
        self.urls = {m.name: f"http://127.0.0.1:{self.servers.ports[key]}/" for m, key in zip(self.mirrors, roots)}
        self.tools = {(m.name, phase): Tool(f"{m.name}: {phase}", lambda m=m, phase=phase: m.command(phase))
                      for m in self.mirrors for phase in PHASES}
        atexit.register(self.close)

    def close(self) -> None:
        self.aptly.stop()
        self.servers.stop()

    def rounds(self, reps: int) -> None:
        try:
            for number in range(reps):
                shift = number % len(self.mirrors)
                for mirror in self.mirrors[shift:] + self.mirrors[:shift]:
                    mirror.prepare()
                    for phase, generation in zip(PHASES, (1, 2, 2)):
                        self.upstream.serve(generation)
                        self.sync(mirror, phase, generation, number)
        finally:
            self.close()

    def sync(self, mirror: Mirror, phase: str, generation: int, number: int) -> None:
        """One timed sync: before it, the held client's update; during it, the looping
        reader (not on the first, when there is nothing to read yet); after it, what
        the server sent, what was placed, and the check that the mirror is whole."""
        tool, url = self.tools[(mirror.name, phase)], self.urls[mirror.name]
        held = WORK / "held-client"
        if phase == "incremental":
            failure = read_once(url, mirror.keyring, "--keep", str(held))
            if failure:
                raise RuntimeError(f"{mirror.name}: apt cannot read the mirror before the sync: {failure}")
        before = tree_state(mirror.served)
        command = mirror.command(phase)
        self.link.reset()
        offset = self.servers.mark()
        os.sync()  # untimed: no tool pays for the page cache the previous one left dirty
        reader = Reader(url, mirror.keyring) if phase != "first" else None
        try:
            sample = measure(command)
        finally:
            if reader:
                reader.stop()
        connections = self.link.reset()["connections"]
        requests = self.servers.since(offset)
        after = tree_state(mirror.served)
        self.check(mirror, generation)
        traffic = {"requests": len(requests), "index_requests": sum("/pool/" not in r for _, _, r in requests),
                   "connections": connections, "server_bytes": sum(b for _, b, _ in requests),
                   "placed_bytes": sum(after[p][1] for p in after if before.get(p) != after[p])}
        failures = []
        if reader:
            failures = list(reader.failures)
            traffic |= {"apt_runs": reader.runs, "apt_failures": len(reader.failures)}
        if phase == "incremental":
            failure = read_once(url, mirror.keyring, "--held", str(held), "--install", INSTALL)
            traffic["held_failures"] = 1 if failure else 0
            failures += [f"held: {failure}"] if failure else []
            shutil.rmtree(held, ignore_errors=True)
        tool.samples.append(sample)
        tool.traffic.append(traffic)
        apt = (f", apt {traffic['apt_failures']} of {traffic['apt_runs']} failed" if reader else "")
        held_text = (f", held {'FAILED' if traffic['held_failures'] else 'ok'}" if "held_failures" in traffic else "")
        print(f"   round {number + 1}: {tool.name:<46} {sample.seconds:8.3f} s {sample.rss_kib / 1024:7.1f} MiB"
              f"  {traffic['requests']} requests ({traffic['index_requests']} index), "
              f"{traffic['server_bytes'] / 1e6:.2f} MB sent, {traffic['placed_bytes'] / 1e6:.2f} MB placed"
              f"{apt}{held_text}", flush=True)
        for failure in failures[:3]:
            print(f"      apt: {failure[:300]}", flush=True)

    def check(self, mirror: Mirror, generation: int) -> None:
        """Every pool file of the generation is served with its size, and a signed Release."""
        for path, size in self.upstream.pool[generation].items():
            placed = mirror.served / path
            if not placed.is_file() or placed.stat().st_size != size:
                raise RuntimeError(f"{mirror.name}: {placed} is missing or has the wrong size after the sync")
        if not (mirror.served / "dists" / SUITE / "InRelease").is_file():
            raise RuntimeError(f"{mirror.name}: no dists/{SUITE}/InRelease after the sync")


# ---------------------------------------------------------------- targets


def median_of(tool: Tool, key: str) -> float:
    values = sorted(t[key] for t in tool.traffic)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def scenarios(jg: str, wanted: set[str], links: list[LinkProxy]) -> list[Scenario]:
    if wanted and not wanted & KEYS:
        return []
    bench = AptBench(jg, links)
    ours, peers = bench.mirrors[0].name, [m.name for m in bench.mirrors[1:]]
    tools = bench.tools

    def requests_within(phase: str, allowance: int, what: str) -> Target:
        def holds(_: dict[str, Tool]) -> tuple[str, bool]:
            mine = median_of(tools[(ours, phase)], "requests")
            fewest = min(median_of(tools[(p, phase)], "requests") for p in peers)
            return f"{mine:.0f} vs {fewest:.0f} + {allowance}", mine <= fewest + allowance
        return Target(f"{phase}: jgmirror's requests ≤ the fewest of the peers' + {what}", holds)

    def no_apt_failures(_: dict[str, Tool]) -> tuple[str, bool]:
        runs = sum(t.get("apt_runs", 0) for p in PHASES for t in tools[(ours, p)].traffic)
        failed = sum(t.get("apt_failures", 0) + t.get("held_failures", 0)
                     for p in PHASES for t in tools[(ours, p)].traffic)
        held = sum(1 for t in tools[(ours, "incremental")].traffic)
        return f"{failed} of {runs} looping runs + {held} held clients", failed == 0

    def name(mirror: str, phase: str) -> str:
        return tools[(mirror, phase)].name

    def faster_peer(phase: str) -> list[str]:
        return [name(p, phase) for p in peers]

    targets = [
        ratio_target("first sync ≤ 0.5 × the faster peer", name(ours, "first"), faster_peer("first"), 0.5),
        ratio_target("incremental sync (5 % changed) ≤ 1.0 × the faster peer", name(ours, "incremental"),
                     faster_peer("incremental"), 1.0),
        ratio_target("no-op sync ≤ 1.0 × the faster peer", name(ours, "no-op"), faster_peer("no-op"), 1.0),
        requests_within("incremental", bench.upstream.changed,
                        f"the {bench.upstream.changed} files generation 2 changed"),
        requests_within("no-op", 0, "0 changed files"),
        Target("jgmirror: apt failures during its syncs = 0", no_apt_failures),
    ]
    megabytes = sum(bench.upstream.pool[1].values()) / 1e6
    return [Scenario("apt500", f"apt repository, {PACKAGES} packages ({megabytes:.0f} MB), each TCP connection "
                               f"{RATE / 1e6:g} MB/s with a {RTT * 1000:g} ms round trip: first sync, 5 % changed, "
                               "no-op; apt reading each mirror",
                     list(tools.values()), targets, runner=bench.rounds)]
