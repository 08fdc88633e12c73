#!/usr/bin/env python3
"""jgmirror side by side with aria2c, axel, curl, wget2, openssl and sha256sum.

Starts nginx on 127.0.0.1 (a plain server, one with limit_rate 4m, which is a
budget per request, and HTTPS + HTTP/2 servers signed by a throwaway CA), and
for the WAN rows bench/linkproxy.py in front of the plain server (each TCP
connection capped at 4 MB/s, a round trip of latency), generates
the data once under bench/out/, runs every tool of a scenario in the same
round (the order rotates each round), and reports the median wall time and
the peak RSS (from wait4) of each tool, the ratios the targets are stated in,
and whether each target is met. Results go to bench/out/results.json and
bench/out/results.svg; --publish copies them next to this script.

The host rows are in bench/hosts.py, the apt rows (jgmirror, debmirror and aptly
mirroring one signed apt repository) in bench/apt.py.

Run it through bench/run.sh, which installs the tools and builds jgmirror.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
WWW = OUT / "www"
DL = OUT / "dl"
KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


# ---------------------------------------------------------------- data


@dataclass
class DataFile:
    name: str  # path below WWW
    size: int
    sha256: str = ""


def generate(files: list[DataFile]) -> None:
    """Writes each file once (distinct pseudo-random content) and records its hash."""
    index_path = WWW / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    block = os.urandom(4 * MiB)
    changed = False
    for number, spec in enumerate(files):
        path = WWW / spec.name
        known = index.get(spec.name)
        if known and path.exists() and path.stat().st_size == spec.size == known["size"]:
            spec.sha256 = known["sha256"]
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with open(path, "wb") as out:
            written, chunk = 0, 0
            while written < spec.size:
                piece = (number.to_bytes(8, "little") + chunk.to_bytes(8, "little") + block[16:])[: spec.size - written]
                out.write(piece)
                digest.update(piece)
                written += len(piece)
                chunk += 1
        spec.sha256 = digest.hexdigest()
        index[spec.name] = {"size": spec.size, "sha256": spec.sha256}
        changed = True
    if changed:
        index_path.write_text(json.dumps(index))


# ---------------------------------------------------------------- nginx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_quietly(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificates(directory: Path) -> None:
    """A throwaway CA, a server certificate it signs, and a rogue self-signed one."""
    if (directory / "rogue.crt").exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    d = str(directory)
    run_quietly(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                 "-subj", "/CN=jgmirror bench CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt"])
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run_quietly(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                 "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr"])
    run_quietly(["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.crt",
                 "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-days", "30",
                 "-extfile", f"{d}/san.ext", "-out", f"{d}/server.crt"])
    run_quietly(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                 "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", f"{d}/rogue.key", "-out", f"{d}/rogue.crt"])


class Nginx:
    """nginx on loopback: plain, limit_rate 4m (a budget per request), TLS+h2, TLS+h2 with a rogue cert."""

    def __init__(self) -> None:
        self.prefix = OUT / "nginx"
        self.ports = {name: free_port() for name in ("plain", "throttled", "tls", "rogue")}
        self.process: Optional[subprocess.Popen] = None

    def url(self, server: str) -> str:
        scheme = "https" if server in ("tls", "rogue") else "http"
        return f"{scheme}://127.0.0.1:{self.ports[server]}"

    def start(self) -> None:
        certs = self.prefix / "certs"
        make_certificates(certs)
        for sub in ("logs", "tmp"):
            (self.prefix / sub).mkdir(parents=True, exist_ok=True)
        user = "user root root;" if os.geteuid() == 0 else ""
        # /moved/X and /moved308/X redirect to /X the way nginx does, with a small HTML body.
        moved = r"location ~ ^/moved/(.*)$ { return 302 /$1; } location ~ ^/moved308/(.*)$ { return 308 /$1; }"
        common = f"root {WWW}; access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000; " + moved
        config = f"""
{user}
worker_processes 2;
daemon off;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
  default_type application/octet-stream;
  client_body_temp_path {self.prefix}/tmp/body;
  proxy_temp_path {self.prefix}/tmp/proxy;
  fastcgi_temp_path {self.prefix}/tmp/fastcgi;
  uwsgi_temp_path {self.prefix}/tmp/uwsgi;
  scgi_temp_path {self.prefix}/tmp/scgi;
  keepalive_timeout 120s;
  server {{ listen 127.0.0.1:{self.ports['plain']}; {common} }}
  server {{ listen 127.0.0.1:{self.ports['throttled']}; {common} limit_rate 4m; }}
  server {{ listen 127.0.0.1:{self.ports['tls']} ssl http2; {common}
           ssl_certificate {certs}/server.crt; ssl_certificate_key {certs}/server.key; }}
  server {{ listen 127.0.0.1:{self.ports['rogue']} ssl http2; {common}
           ssl_certificate {certs}/rogue.crt; ssl_certificate_key {certs}/rogue.key; }}
}}
"""
        conf = self.prefix / "nginx.conf"
        conf.write_text(config)
        self.process = subprocess.Popen(["nginx", "-p", str(self.prefix), "-c", str(conf)],
                                        stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.ports["plain"]), timeout=0.2):
                    return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        sys.exit(f"nginx did not start; see {self.prefix}/logs/error.log")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


class LinkProxy:
    """bench/linkproxy.py in front of an upstream: each TCP connection capped at `rate`
    bytes per second, `rtt` of latency, optionally every `slow_every`-th connection
    at a tenth of the rate, and all connections together at `client_rate`. `reset()`
    (before every run) restarts its connection count and returns the previous run's
    connections and requests."""

    def __init__(self, upstream_port: int, rate: float, rtt: float, slow_every: int = 0,
                 client_rate: float = 0.0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "linkproxy.py"), "--upstream", f"127.0.0.1:{upstream_port}",
             "--rate", str(rate), "--rtt", str(rtt), "--slow-every", str(slow_every),
             "--client-rate", str(client_rate)],
            stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().split()
        if not ready or ready[0] != "READY":
            sys.exit("bench/linkproxy.py did not start")
        self.port = int(ready[1])
        self.last: dict[str, int] = {}

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> dict[str, int]:
        self.process.send_signal(signal.SIGHUP)
        fields = self.process.stdout.readline().split()[1:]
        self.last = {key: int(value) for key, value in (f.split("=") for f in fields)}
        return self.last

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


# ---------------------------------------------------------------- measuring


class ToolFailed(RuntimeError):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Sample:
    seconds: float
    rss_kib: int


def measure(cmd: list[str]) -> Sample:
    """Runs cmd to completion; wall time, and the peak RSS of its largest process.

    The RSS comes from GNU time rather than this script's wait4: Linux carries a
    forked child's high-water mark across exec, so a child of this (larger)
    process would report this process's size."""
    with tempfile.TemporaryFile() as errors, tempfile.NamedTemporaryFile("r") as usage:
        start = time.perf_counter()
        code = subprocess.call(["/usr/bin/time", "-f", "%M", "-o", usage.name] + cmd,
                               stdout=subprocess.DEVNULL, stderr=errors)
        elapsed = time.perf_counter() - start
        if code != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace")[-800:]
            raise ToolFailed(f"{' '.join(cmd[:3])}… exited {code}:\n{tail}", code)
        rss_kib = int(usage.read().split()[-1])
    return Sample(elapsed, rss_kib)


@dataclass
class Tool:
    name: str
    command: Callable[[], list[str]]
    check: Callable[[], None] = lambda: None  # raises when the result is wrong
    prepare: Callable[[], None] = lambda: None  # untimed, before every run
    # Deletes many files as it runs (aria2c's control files): it goes last in every
    # round, sits out the warm-up, and the next round waits for ext4 to settle.
    deletes_files: bool = False
    samples: list[Sample] = field(default_factory=list)
    # Through a LinkProxy: the connections and requests each run made.
    link: Optional[LinkProxy] = None
    traffic: list[dict[str, int]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def peak_rss_mib(self) -> float:
        return max(s.rss_kib for s in self.samples) / 1024


@dataclass
class Target:
    text: str
    holds: Callable[[dict[str, Tool]], tuple[str, bool]]  # (measured, met)


@dataclass
class Scenario:
    key: str
    title: str
    tools: list[Tool]
    targets: list[Target]
    unit: Optional[tuple[str, float]] = None  # ("files/s", count) to also show a rate
    # A computed row shown with the tools, such as a link's physical limit: (label, seconds).
    reference: Optional[tuple[str, float]] = None
    # Untimed rounds first: after a burst of deletions (such as the previous bench
    # run's cleanup) ext4 creates files several times slower for a while.
    warmup: int = 0
    # Rounds for this scenario when not the run's --reps (one for a long RSS-only run).
    rounds: Optional[int] = None
    # Runs the rounds itself, given their number, filling each tool's samples and traffic:
    # for rows whose runs depend on each other (an apt mirror's first, incremental and
    # no-op sync, bench/apt.py).
    runner: Optional[Callable[[int], None]] = None

    def reps(self, default: int) -> int:
        return self.rounds if self.rounds is not None else default


def run(scenario: Scenario, reps: int) -> None:
    reps = scenario.reps(reps)
    print(f"\n== {scenario.title}", flush=True)
    if scenario.runner:
        scenario.runner(reps)
    else:
        run_rounds(scenario, reps)
    summarize(scenario)


def run_rounds(scenario: Scenario, reps: int) -> None:
    """Each round runs every tool once, the order rotating; tools that delete many
    files go last, after a wait for the filesystem."""
    rotating = [t for t in scenario.tools if not t.deletes_files]
    deleting = [t for t in scenario.tools if t.deletes_files]
    for round_number in range(-scenario.warmup, reps):
        shift = round_number % len(rotating)
        order = rotating[shift:] + rotating[:shift] + (deleting if round_number >= 0 else [])
        if round_number > 0 and deleting:
            print(f"   waiting {SETTLE_SECONDS} s for the filesystem to settle after {deleting[0].name}", flush=True)
            time.sleep(SETTLE_SECONDS)
        for tool in order:
            tool.prepare()
            if tool.link:
                tool.link.reset()
            # Untimed: write back what the previous run left dirty, so no tool pays
            # for another's page cache (curl, wget2 and axel never sync).
            os.sync()
            try:
                sample = measure(tool.command())
            except ToolFailed as failure:
                # A peer that crashed (axel segfaults now and then: exit 139) runs
                # again once; jgmirror's failures always stop the bench.
                if tool.name.startswith("jgmirror") or failure.code < 128:
                    raise
                print(f"   {tool.name} crashed (exit {failure.code}); running it again", flush=True)
                tool.prepare()
                if tool.link:
                    tool.link.reset()
                os.sync()
                sample = measure(tool.command())
            tool.check()
            traffic = ""
            if tool.link:
                tool.traffic.append(tool.link.reset())
                traffic = f"  {tool.traffic[-1]['connections']} connections, {tool.traffic[-1]['requests']} requests"
            label = f"round {round_number + 1}" if round_number >= 0 else "warm-up"
            if round_number >= 0:
                tool.samples.append(sample)
            print(f"   {label}: {tool.name:<34} {sample.seconds:8.3f} s"
                  f"  {sample.rss_kib / 1024:8.1f} MiB{traffic}", flush=True)


def summarize(scenario: Scenario) -> None:
    """Prints each tool's median, its ratio to the fastest, and whether each target is met."""
    fastest = min(t.median for t in scenario.tools)
    print(f"   {'tool':<34} {'median s':>9} {'× best':>7} {'peak RSS':>10}")
    for tool in scenario.tools:
        rate = f"   {scenario.unit[1] / tool.median:,.0f} {scenario.unit[0]}" if scenario.unit else ""
        print(f"   {tool.name:<34} {tool.median:9.3f} {tool.median / fastest:7.2f}"
              f" {tool.peak_rss_mib:7.1f} MiB{rate}")
    if scenario.reference:
        print(f"   {scenario.reference[0]:<34} {scenario.reference[1]:9.3f} {scenario.reference[1] / fastest:7.2f}")
    by_name = {t.name: t for t in scenario.tools}
    for target in scenario.targets:
        measured, met = target.holds(by_name)
        print(f"   target {target.text}: {measured} -> {'MET' if met else 'MISSED'}")


# ---------------------------------------------------------------- scenarios


TRASH = OUT / "trash"


SETTLED = OUT / "deleted-at"
SETTLE_SECONDS = 60  # after 2000 deletions; measured slow for about 50 s after 12,000


def clean_up() -> None:
    """Deletes the outputs and notes when, and how many files: ext4 (at least with
    online discard, as on the machine in RESULTS.md) then creates files several
    times slower for up to a minute, which would be measured as the next tools' time."""
    if DL.exists() or TRASH.exists():
        count = sum(len(files) for root in (DL, TRASH) for _, _, files in os.walk(root))
        shutil.rmtree(DL, ignore_errors=True)
        shutil.rmtree(TRASH, ignore_errors=True)
        SETTLED.parent.mkdir(parents=True, exist_ok=True)
        SETTLED.write_text(f"{count}\n")


def settle() -> None:
    """Waits out the slow spell after the last mass deletion (a killed run's leftovers
    or the previous run's clean-up): 1.5 × the minute measured after 12,000 files,
    longer in proportion after more (the 20,000- and 100,000-item scenarios leave
    hundreds of thousands), at most five minutes."""
    clean_up()
    if not SETTLED.exists():
        return
    try:
        deleted = int(SETTLED.read_text().strip() or 0)
    except ValueError:
        deleted = 0
    span = min(300.0, 1.5 * SETTLE_SECONDS * max(1.0, deleted / 12_000))
    wait = span - (time.time() - SETTLED.stat().st_mtime)
    if wait > 0:
        print(f"waiting {wait:.0f} s for the filesystem to settle after deleting the last run's output",
              flush=True)
        time.sleep(wait)


def fresh(path: Path) -> Callable[[], None]:
    """Clears a tool's output before a run. A folder of many files moves to a trash
    folder emptied only at the end: ext4 scans past recently deleted inodes when it
    allocates new ones, so deleting 2000 files right before a run slows that run's
    file creation by a factor that has nothing to do with the tool."""
    def prepare() -> None:
        if path.is_dir():
            TRASH.mkdir(parents=True, exist_ok=True)
            path.rename(TRASH / f"{path.name}-{time.monotonic_ns()}")
        elif path.exists():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
    return prepare


def has_size(path: Path, size: int) -> Callable[[], None]:
    def check() -> None:
        actual = path.stat().st_size if path.exists() else -1
        if actual != size:
            raise RuntimeError(f"{path} has {actual} bytes, expected {size}")
    return check


def downloaded_files(directory: Path) -> int:
    """Files below directory, not counting jgmirror's own (its state folder
    `.jgmirror/` and other dot files at the root); a leftover part file fails the count."""
    count = 0
    for root, folders, files in os.walk(directory):
        if Path(root) == directory:
            folders[:] = [f for f in folders if f != ".jgmirror"]
        for name in files:
            if name.endswith((".jgpart", ".jgd")):
                raise RuntimeError(f"{root}/{name} left behind")
            count += not (name.startswith(".") and Path(root) == directory)
    return count


def has_files(directory: Path, files: list[DataFile]) -> Callable[[], None]:
    def check() -> None:
        for spec in files:
            has_size(directory / Path(spec.name).name, spec.size)()
    return check


def ratio_target(text: str, subject: str, peers: list[str], limit: float, inverse: bool = False) -> Target:
    """subject's time ≤ limit × the fastest peer's (or, inverse: peer ≥ limit × subject)."""
    def holds(tools: dict[str, Tool]) -> tuple[str, bool]:
        best = min(tools[p].median for p in peers)
        ratio = best / tools[subject].median if inverse else tools[subject].median / best
        return f"{ratio:.2f}×", (ratio >= limit if inverse else ratio <= limit)
    return Target(text, holds)


def write_manifest(path: Path, root: Path, items: list[tuple[str, str, str]], extra: str = "") -> Path:
    lines = [f"version: 1\nroot: {root}\n{extra}items:\n"]
    for url, dest, sha in items:
        lines.append(f"  - url: {url}\n    dest: {dest}\n    sha256: {sha}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))
    return path


SMALL_ONLY = {"small2000", "small2000h2", "many20k", "rss100k", "noop100k", "noop1g", "state100k", "cond2000",
              "snapshot10k", "setsnapshot10k"}
# Rows that need the 1 GiB file and nothing else of the large data.
F1G_ONLY = {"placed1g"}
F48_ONLY = {"throttled48", "wan50", "wan200", "wan100slow", "wan8m4"}
LINKS: list[LinkProxy] = []  # stopped when the bench ends
LINK_RATE = 4_000_000  # bytes per second per connection on the WAN links
FLOOR = "jgmirror --no-fsync, then sync -f (durability's floor)"


def durable_floor(command: list[str], folder: Path) -> list[str]:
    """`command`, then one `syncfs` of the file system holding `folder`."""
    return ["sh", "-c", '"$@" && exec sync -f "$0"', str(folder)] + command


def scenarios(jg: str, nginx: Nginx, quick: bool, wanted: set[str]) -> list[Scenario]:
    import apt  # the apt rows (issue 44); both import this module, so not at the top
    import hosts  # the host rows (issue 31)
    quiet = ["--progress", "none", "--quiet"]
    f48 = DataFile("f48m.bin", 48 * MiB)
    f8 = DataFile("f8m.bin", 8 * MiB)
    f1g = DataFile("f1g.bin", 1 * GiB)
    f4g = DataFile("f4g.bin", 4 * GiB)
    small = [DataFile(f"small/s{i:04}.bin", 16 * KiB) for i in range(2000)]
    big = [DataFile(f"big/b{i:03}.bin", 16 * MiB) for i in range(200)]
    # The small-file scenarios need only the 2000 small files; the rest is written
    # (once) when a scenario that reads it is selected.
    if wanted and wanted <= SMALL_ONLY:
        generate(small)
    elif wanted and wanted <= apt.KEYS:
        pass  # the apt rows generate a repository of their own
    elif wanted and wanted <= hosts.KEYS:
        generate(small[:200] + [f48])
    elif wanted and wanted <= F48_ONLY:
        generate([f48, f8])
    elif wanted and wanted <= F1G_ONLY:
        generate([f1g])
    else:
        generate([f48, f8, f1g, small[0]] + small[1:] + big + ([] if quick else [f4g]))
    plain, throttled = nginx.url("plain"), nginx.url("throttled")
    out = DL / "file.bin"
    result: list[Scenario] = []

    def get(url: str, spec: DataFile, connections: int, *extra: str) -> list[str]:
        return [jg, "get", url, "-o", str(out), "-c", str(connections), "--sha256", spec.sha256, *extra] + quiet

    # 2000 × 16 KiB with checksums, 16 in flight. First, before the large-file
    # scenarios delete gigabytes (see settle()).
    small_dir = DL / "small"
    manifest = write_manifest(OUT / "manifests" / "small.yaml", small_dir,
                              [(f"{plain}/{s.name}", Path(s.name).name, s.sha256) for s in small])
    urls = OUT / "manifests" / "small.urls"
    urls.write_text("".join(f"{plain}/{s.name}\n" for s in small))

    def curl_config(name: str, files: list[DataFile], base: str = plain) -> Path:
        config = OUT / "manifests" / name
        config.write_text("".join(f'url = "{base}/{s.name}"\noutput = "{small_dir}/{Path(s.name).name}"\n'
                                  for s in files))
        return config

    full_list = curl_config("small.curl", small)
    # Reference, not a peer: two curl processes, half the list each, show what the two
    # cores give a client that neither hashes nor renames.
    halves = [curl_config(f"small-half{n + 1}.curl", small[n::2]) for n in (0, 1)]
    aria_input = OUT / "manifests" / "small.aria2"
    aria_input.write_text("".join(f"{plain}/{s.name}\n  dir={small_dir}\n  out={Path(s.name).name}\n"
                                  f"  checksum=sha-256={s.sha256}\n" for s in small))
    small_tools = [
        Tool("jgmirror sync --jobs 16", lambda: [jg, "sync", str(manifest), "--jobs", "16"] + quiet),
        Tool("jgmirror sync --jobs 16 --no-fsync", lambda: [jg, "sync", str(manifest), "--jobs", "16", "--no-fsync"] + quiet),
        # The floor for a durable run: the same without a sync, then one syncfs of the
        # file system that holds the files (what a run could do at best, and it would
        # then wait on every other writer of the file system too).
        Tool(FLOOR, lambda: durable_floor([jg, "sync", str(manifest), "--jobs", "16", "--no-fsync"] + quiet,
                                          small_dir)),
        Tool("wget2 --max-threads=16", lambda: ["wget2", "-q", "--max-threads=16", "--no-robots", "-nd",
                                                 "-P", str(small_dir), "-i", str(urls)]),
        Tool("curl --parallel-max 16", lambda: ["curl", "-sSf", "--parallel", "--parallel-max", "16",
                                                 "--create-dirs", "-K", str(full_list)]),
        Tool("aria2c -j16 -i (checksums)", lambda: ["aria2c", "-q", "-j16", "--allow-overwrite=true",
                                                    "--auto-file-renaming=false", "-i", str(aria_input)],
             deletes_files=True),
        Tool("2 × curl, half each (reference)", lambda: [
            "sh", "-c", "curl -sSf --parallel --parallel-max 8 --create-dirs -K \"$1\" & a=$!; "
                        "curl -sSf --parallel --parallel-max 8 --create-dirs -K \"$2\" & b=$!; "
                        "wait $a && wait $b", "sh", str(halves[0]), str(halves[1])]),
    ]
    for tool in small_tools:
        tool.prepare, tool.check = fresh(small_dir), has_files(small_dir, small)
    peers = ["wget2 --max-threads=16", "curl --parallel-max 16", "aria2c -j16 -i (checksums)"]
    result.append(Scenario("small2000", "2000 files × 16 KiB, checksums on, 16 in flight", small_tools,
                           [ratio_target("jgmirror ≥ 1.2 × fastest peer's files/s", "jgmirror sync --jobs 16",
                                         peers, 1.2, inverse=True),
                            ratio_target("jgmirror --no-fsync (no sync, as the peers) ≥ 1.2 × fastest peer's files/s",
                                         "jgmirror sync --jobs 16 --no-fsync", peers, 1.2, inverse=True),
                            ratio_target("jgmirror ≤ 1.3 × curl", "jgmirror sync --jobs 16",
                                         ["curl --parallel-max 16"], 1.3),
                            ratio_target("jgmirror --no-fsync ≤ 1.3 × curl", "jgmirror sync --jobs 16 --no-fsync",
                                         ["curl --parallel-max 16"], 1.3),
                            ratio_target("jgmirror ≤ 0.8 × wget2", "jgmirror sync --jobs 16",
                                         ["wget2 --max-threads=16"], 0.8),
                            ratio_target("jgmirror ≤ 1.1 × durability's floor", "jgmirror sync --jobs 16", [FLOOR],
                                         1.1)],
                           unit=("files/s", len(small)), warmup=1))

    # The same 2000 files over HTTPS + HTTP/2 from the throwaway CA: every tool
    # multiplexes its requests over one TLS connection, so what differs is the cost
    # per stream.
    tls = nginx.url("tls")
    ca = str(nginx.prefix / "certs" / "ca.crt")
    h2_manifest = write_manifest(OUT / "manifests" / "small-h2.yaml", small_dir,
                                 [(f"{tls}/{s.name}", Path(s.name).name, s.sha256) for s in small])
    h2_list = curl_config("small-h2.curl", small, base=tls)
    h2_tools = [
        Tool("jgmirror sync --jobs 16 (h2)",
             lambda: [jg, "sync", str(h2_manifest), "--jobs", "16", "--ca-cert", ca] + quiet),
        Tool("jgmirror sync --jobs 16 --no-fsync (h2)",
             lambda: [jg, "sync", str(h2_manifest), "--jobs", "16", "--ca-cert", ca, "--no-fsync"] + quiet),
        Tool(FLOOR + " (h2)", lambda: durable_floor(
            [jg, "sync", str(h2_manifest), "--jobs", "16", "--ca-cert", ca, "--no-fsync"] + quiet, small_dir)),
        Tool("curl -Z --parallel-max 16 (h2)",
             lambda: ["curl", "-sSf", "--http2", "--cacert", ca, "-Z", "--parallel-max", "16",
                      "--create-dirs", "-K", str(h2_list)]),
    ]
    for tool in h2_tools:
        tool.prepare, tool.check = fresh(small_dir), has_files(small_dir, small)
    result.append(Scenario("small2000h2", "2000 files × 16 KiB over HTTPS + HTTP/2, checksums on, 16 in flight",
                           h2_tools,
                           [ratio_target("jgmirror ≤ 1.3 × curl (HTTPS + HTTP/2)", "jgmirror sync --jobs 16 (h2)",
                                         ["curl -Z --parallel-max 16 (h2)"], 1.3),
                            ratio_target("jgmirror --no-fsync ≤ 1.3 × curl (HTTPS + HTTP/2)",
                                         "jgmirror sync --jobs 16 --no-fsync (h2)",
                                         ["curl -Z --parallel-max 16 (h2)"], 1.3),
                            ratio_target("jgmirror ≤ 1.1 × durability's floor (h2)", "jgmirror sync --jobs 16 (h2)",
                                         [FLOOR + " (h2)"], 1.1)],
                           unit=("files/s", len(small)), warmup=1))

    # 20,000 items of 16 KiB in ten folders (the 2000 files, each fetched ten times
    # under other names), plain HTTP, 16 in flight; peak RSS of each tool.
    many_dir = DL / "many"
    many = [(small[i % 2000], f"d{i // 2000}/f{i:05}.bin") for i in range(20_000)]
    many_manifest = write_manifest(OUT / "manifests" / "many20k.yaml", many_dir,
                                   [(f"{plain}/{spec.name}", dest, spec.sha256) for spec, dest in many])
    many_list = OUT / "manifests" / "many20k.curl"
    many_list.write_text("".join(f'url = "{plain}/{spec.name}"\noutput = "{many_dir}/{dest}"\n' for spec, dest in many))

    def has_many() -> None:
        for spec, dest in many[::97] + many[-1:]:
            has_size(many_dir / dest, spec.size)()
        count = downloaded_files(many_dir)
        if count != len(many):
            raise RuntimeError(f"{many_dir} holds {count} files, expected {len(many)}")

    many_tools = [
        Tool("jgmirror sync --jobs 16 (20,000)", lambda: [jg, "sync", str(many_manifest), "--jobs", "16"] + quiet),
        Tool("jgmirror sync --jobs 16 --no-fsync (20,000)",
             lambda: [jg, "sync", str(many_manifest), "--jobs", "16", "--no-fsync"] + quiet),
        Tool(FLOOR + " (20,000)", lambda: durable_floor(
            [jg, "sync", str(many_manifest), "--jobs", "16", "--no-fsync"] + quiet, many_dir)),
        Tool("curl --parallel-max 16 (20,000)", lambda: ["curl", "-sSf", "--parallel", "--parallel-max", "16",
                                                          "--create-dirs", "-K", str(many_list)]),
    ]
    for tool in many_tools:
        tool.prepare, tool.check = fresh(many_dir), has_many

    def rss_under(name: str, limit: float) -> Target:
        return Target(f"{name} peak RSS ≤ {limit:.0f} MiB",
                      lambda tools: (f"{tools[name].peak_rss_mib:.1f} MiB", tools[name].peak_rss_mib <= limit))

    result.append(Scenario("many20k", "20,000 files × 16 KiB in ten folders, checksums on, 16 in flight", many_tools,
                           [ratio_target("jgmirror ≤ 1.3 × curl (20,000)", "jgmirror sync --jobs 16 (20,000)",
                                         ["curl --parallel-max 16 (20,000)"], 1.3),
                            ratio_target("jgmirror --no-fsync ≤ 1.3 × curl (20,000)",
                                         "jgmirror sync --jobs 16 --no-fsync (20,000)",
                                         ["curl --parallel-max 16 (20,000)"], 1.3),
                            ratio_target("jgmirror ≤ 1.1 × durability's floor (20,000)",
                                         "jgmirror sync --jobs 16 (20,000)", [FLOOR + " (20,000)"], 1.1),
                            rss_under("jgmirror sync --jobs 16 (20,000)", 48)],
                           unit=("files/s", len(many)), warmup=1))

    # Peak RSS of a 100,000-item sync (16 KiB each, 100 folders): one round.
    huge_dir = DL / "huge"
    huge = [(small[i % 2000], f"d{i // 1000:03}/f{i:06}.bin") for i in range(100_000)]
    huge_manifest = write_manifest(OUT / "manifests" / "huge100k.yaml", huge_dir,
                                   [(f"{plain}/{spec.name}", dest, spec.sha256) for spec, dest in huge])

    def has_huge() -> None:
        count = downloaded_files(huge_dir)
        if count != len(huge):
            raise RuntimeError(f"{huge_dir} holds {count} files, expected {len(huge)}")

    huge_tool = Tool("jgmirror sync --jobs 16 (100,000)",
                     lambda: [jg, "sync", str(huge_manifest), "--jobs", "16"] + quiet, has_huge, fresh(huge_dir))
    result.append(Scenario("rss100k", "peak RSS, 100,000 files × 16 KiB in 100 folders", [huge_tool],
                           [rss_under(huge_tool.name, 64)], unit=("files/s", len(huge)), rounds=1))

    # 48 MiB (or `spec`) over a WAN link: every TCP connection capped at 4 MB/s with a
    # round trip of latency (bench/linkproxy.py in front of the plain nginx server).
    def wan(key: str, rtt: float, slow_every: int = 0, spec: DataFile = f48, connections: int = 8) -> Scenario:
        wanted_here = not wanted or key in wanted
        link = LinkProxy(nginx.ports["plain"], LINK_RATE, rtt, slow_every) if wanted_here else None
        if link:
            LINKS.append(link)
        url = f"{link.url() if link else plain}/{spec.name}"
        n = connections
        mib = spec.size // MiB
        if slow_every:
            rates = [LINK_RATE / 10 if (i + 1) % slow_every == 0 else LINK_RATE for i in range(n)]
            limit_label = f"physical limit ({mib} MiB / {sum(rates) / 1e6:.1f} MB/s + 2 RTT)"
        else:
            rates = [LINK_RATE] * n
            limit_label = f"physical limit ({mib} MiB / {sum(rates) / 1e6:.0f} MB/s + 2 RTT)"
        limit = spec.size / sum(rates) + 2 * rtt
        # The same download as a sync whose manifest gives the size, as a mirror's
        # manifest usually does: the regions are cut before the first answer.
        sized = OUT / "manifests" / f"{key}-sized.yaml"
        sized.parent.mkdir(parents=True, exist_ok=True)
        sized.write_text(f"version: 1\nroot: {DL}\nitems:\n  - url: {url}\n    dest: {out.name}\n"
                         f"    sha256: {spec.sha256}\n    size: {spec.size}\n    connections: {n}\n")
        sized_name = "jgmirror sync, manifest gives size (+sha256)"
        axel, aria2c = f"axel -n {n}", f"aria2c -x{n} -s{n} -k1M"
        tools = [
            Tool(f"jgmirror get -c {n} (+sha256)", lambda: get(url, spec, n), has_size(out, spec.size), fresh(out),
                 link=link),
            Tool(sized_name, lambda: [jg, "sync", str(sized)] + quiet, has_size(out, spec.size), fresh(out), link=link),
            Tool(f"jgmirror get -c {n} --no-fsync (+sha256)", lambda: get(url, spec, n, "--no-fsync"),
                 has_size(out, spec.size), fresh(out), link=link),
            Tool(axel, lambda: ["axel", "-q", "-n", str(n), "-o", str(out), url], has_size(out, spec.size),
                 fresh(out), link=link),
            Tool(aria2c, lambda: ["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--allow-overwrite=true",
                                  "--auto-file-renaming=false", "-d", str(DL), "-o", out.name, url],
                 has_size(out, spec.size), fresh(out), link=link),
        ]
        peers = [axel, aria2c]
        if slow_every:
            title = (f"{mib} MiB, every TCP connection capped at 4 MB/s, {rtt * 1000:.0f} ms round trip, "
                     f"one connection in {slow_every} at a tenth of the rate, {n} connections")
            targets = [ratio_target("jgmirror ≤ 0.9 × faster of axel/aria2c", tools[0].name, peers, 0.9),
                       ratio_target("the same, manifest gives size", sized_name, peers, 0.9)]
        else:
            # One connection as the check on the link itself: the file / 4 MB/s + 2 RTT.
            tools.append(Tool("curl (one connection)", lambda: ["curl", "-sSf", "-o", str(out), url],
                              has_size(out, spec.size), fresh(out), link=link))
            title = f"{mib} MiB, every TCP connection capped at 4 MB/s, {rtt * 1000:.0f} ms round trip, {n} connections"
            targets = [ratio_target("jgmirror ≤ 1.0 × faster of axel/aria2c", tools[0].name, peers, 1.0),
                       Target("jgmirror ≤ 1.05 × physical limit",
                              lambda t: (f"{t[tools[0].name].median / limit:.2f}×",
                                         t[tools[0].name].median <= 1.05 * limit)),
                       ratio_target("the same, manifest gives size: ≤ 1.0 × faster peer", sized_name, peers, 1.0),
                       Target("the same, manifest gives size: ≤ 1.05 × physical limit",
                              lambda t: (f"{t[sized_name].median / limit:.2f}×", t[sized_name].median <= 1.05 * limit))]
        return Scenario(key, title, tools, targets, reference=(limit_label, limit))

    result.append(wan("wan50", 0.05))
    result.append(wan("wan200", 0.2))
    result.append(wan("wan100slow", 0.1, slow_every=5))
    # A file of a few regions: 8 MiB over 4 connections, where a tail or a steal weighs most.
    result.append(wan("wan8m4", 0.05, spec=f8, connections=4))

    # 48 MiB from nginx's limit_rate, which is not a link: a budget per request,
    # rate × (elapsed + 1 s) − sent, so every new request starts with a second's worth.
    url48 = f"{throttled}/{f48.name}"
    result.append(Scenario("throttled48", "48 MiB from nginx limit_rate 4m: a budget per request with a one-second "
                                          "head start (not a link), 8 connections", [
        Tool("jgmirror get -c 8 (+sha256)", lambda: get(url48, f48, 8), has_size(out, f48.size), fresh(out)),
        Tool("aria2c -x8 -s8 -k1M", lambda: ["aria2c", "-q", "-x8", "-s8", "-k1M", "--allow-overwrite=true",
                                              "--auto-file-renaming=false", "-d", str(DL), "-o", out.name, url48],
             has_size(out, f48.size), fresh(out)),
        Tool("axel -n 8", lambda: ["axel", "-q", "-n", "8", "-o", str(out), url48], has_size(out, f48.size), fresh(out)),
        Tool("curl (one connection)", lambda: ["curl", "-sSf", "-o", str(out), url48], has_size(out, f48.size), fresh(out)),
    ], [ratio_target("jgmirror ≤ 0.9 × faster of aria2c/axel", "jgmirror get -c 8 (+sha256)",
                     ["aria2c -x8 -s8 -k1M", "axel -n 8"], 0.9),
        ratio_target("jgmirror ≤ 0.5 × one connection", "jgmirror get -c 8 (+sha256)",
                     ["curl (one connection)"], 0.5)]))

    # 1 GiB unthrottled, fetch + verify.
    url1g = f"{plain}/{f1g.name}"
    result.append(Scenario("fetch1g", "1 GiB unthrottled loopback, fetch + SHA-256", [
        Tool("jgmirror get -c 4 (+sha256)", lambda: get(url1g, f1g, 4), has_size(out, f1g.size), fresh(out)),
        Tool("jgmirror get -c 4 --no-fsync (+sha256)", lambda: get(url1g, f1g, 4, "--no-fsync"),
             has_size(out, f1g.size), fresh(out)),
        Tool("jgmirror get -c 1 (+sha256)", lambda: get(url1g, f1g, 1), has_size(out, f1g.size), fresh(out)),
        Tool("jgmirror get -c 1 --no-fsync (+sha256)", lambda: get(url1g, f1g, 1, "--no-fsync"),
             has_size(out, f1g.size), fresh(out)),
        Tool("curl -o (fetch only)", lambda: ["curl", "-sSf", "-o", str(out), url1g], has_size(out, f1g.size), fresh(out)),
        Tool("curl -o + sync (durable)", lambda: ["sh", "-c", f"curl -sSf -o {out} {url1g} && sync {out}"],
             has_size(out, f1g.size), fresh(out)),
        Tool("aria2c -x4 --checksum", lambda: ["aria2c", "-q", "-x4", "-s4", f"--checksum=sha-256={f1g.sha256}",
                                                "--allow-overwrite=true", "--auto-file-renaming=false",
                                                "-d", str(DL), "-o", out.name, url1g],
             has_size(out, f1g.size), fresh(out)),
    ], [ratio_target("jgmirror ≤ 1.1 × curl fetch alone", "jgmirror get -c 4 (+sha256)", ["curl -o (fetch only)"], 1.1),
        ratio_target("jgmirror --no-fsync ≤ 1.1 × curl fetch alone",
                     "jgmirror get -c 4 --no-fsync (+sha256)", ["curl -o (fetch only)"], 1.1),
        ratio_target("jgmirror -c 1 --no-fsync (one connection, no sync: as curl) ≤ 1.1 × curl fetch alone",
                     "jgmirror get -c 1 --no-fsync (+sha256)", ["curl -o (fetch only)"], 1.1),
        ratio_target("jgmirror ≤ 1.1 × curl -o + sync (both durable)", "jgmirror get -c 4 (+sha256)",
                     ["curl -o + sync (durable)"], 1.1),
        ratio_target("jgmirror -c 1 ≤ 1.1 × curl -o + sync (both durable, one connection)", "jgmirror get -c 1 (+sha256)",
                     ["curl -o + sync (durable)"], 1.1),
        ratio_target("jgmirror ≤ 0.5 × aria2c with checksum", "jgmirror get -c 4 (+sha256)",
                     ["aria2c -x4 --checksum"], 0.5)]))

    # verify 1 GiB on disk.
    verify1g = write_manifest(OUT / "manifests" / "verify1g.yaml", WWW, [(f"{plain}/{f1g.name}", f1g.name, f1g.sha256)])
    result.append(Scenario("verify1g", "verify 1 GiB on disk (page cache warm)", [
        Tool("jgmirror verify", lambda: [jg, "verify", str(verify1g), "--quiet"]),
        Tool("openssl dgst -sha256", lambda: ["openssl", "dgst", "-sha256", str(WWW / f1g.name)]),
        Tool("sha256sum", lambda: ["sha256sum", str(WWW / f1g.name)]),
    ], [ratio_target("jgmirror ≤ 1.1 × openssl", "jgmirror verify", ["openssl dgst -sha256"], 1.1)]))

    # verify 200 × 16 MiB.
    verify200 = write_manifest(OUT / "manifests" / "verify200.yaml", WWW,
                               [(f"{plain}/{b.name}", b.name, b.sha256) for b in big])
    big_list = " ".join(str(WWW / b.name) for b in big)
    result.append(Scenario("verify200", "verify 200 files × 16 MiB (page cache warm)", [
        Tool("jgmirror verify", lambda: [jg, "verify", str(verify200), "--quiet"]),
        Tool("xargs -P2 sha256sum", lambda: ["sh", "-c", f"printf '%s\\n' {big_list} | xargs -P2 -n 10 sha256sum"]),
    ], [ratio_target("jgmirror ≥ 1.5 × faster than xargs -P2 sha256sum", "jgmirror verify",
                     ["xargs -P2 sha256sum"], 1.5, inverse=True)]))

    # Peak RSS with 16 connections, 1 GiB and 4 GiB.
    rss_tools = [Tool("jgmirror get 1 GiB -c 16", lambda: get(url1g, f1g, 16), has_size(out, f1g.size), fresh(out))]
    if not quick:
        url4g = f"{plain}/{f4g.name}"
        rss_tools.append(Tool("jgmirror get 4 GiB -c 16", lambda: get(url4g, f4g, 16), has_size(out, f4g.size), fresh(out)))
    result.append(Scenario("rss", "peak RSS, 16 connections", rss_tools,
                           [rss_under(t.name, 64) for t in rss_tools]))

    # Plan 100,000 items.
    plan_root = OUT / "plan-root"
    plan_root.mkdir(parents=True, exist_ok=True)
    plan_manifest = write_manifest(OUT / "manifests" / "plan100k.yaml", plan_root,
                                   [(f"{plain}/small/s{i % 2000:04}.bin", f"d{i // 1000:03}/f{i:06}.bin",
                                     small[i % 2000].sha256) for i in range(100_000)],
                                   extra="defaults:\n  connections: 4\n  tags: [bench]\n")
    plan_tool = Tool("jgmirror plan (100,000 items)", lambda: [jg, "plan", str(plan_manifest), "--quiet"])
    result.append(Scenario("plan100k", "plan a 100,000-item manifest", [plan_tool], [
        Target("≤ 1 s", lambda t: (f"{plan_tool.median:.3f} s", plan_tool.median <= 1.0)),
        Target("≤ 100 MiB", lambda t: (f"{plan_tool.peak_rss_mib:.1f} MiB", plan_tool.peak_rss_mib <= 100)),
    ]))

    result += state_scenarios(jg, plain, small, f1g, wanted)
    result += hosts.scenarios(jg, nginx, small, f48, wanted, LINKS)
    result += apt.scenarios(jg, wanted, LINKS)
    return result


# ---------------------------------------------------------------- the state database (issue 13)


def once(action: Callable[[], None]) -> Callable[[], None]:
    """A prepare step that does its work the first time only (untimed setup)."""
    done: list[bool] = []

    def prepare() -> None:
        if not done:
            action()
            done.append(True)
    return prepare


def zeros_sha256(size: int) -> str:
    digest, block = hashlib.sha256(), bytes(4 * MiB)
    left = size
    while left:
        piece = min(left, len(block))
        digest.update(block[:piece])
        left -= piece
    return digest.hexdigest()


def sparse_tree(root: Path, count: int, big_every: int, big_size: int, small_size: int) -> list[tuple[str, int, str]]:
    """count files in folders of 1000 (once; kept between bench runs): every
    big_every-th a sparse file of big_size zero bytes (truncate: no blocks on disk),
    the others small_size bytes of distinct data. Returns (dest, size, sha256)."""
    index = root.parent / f"{root.name}.json"
    if index.exists() and root.exists():
        return [tuple(entry) for entry in json.loads(index.read_text())]
    shutil.rmtree(root, ignore_errors=True)
    big_sha = zeros_sha256(big_size)
    block = hashlib.sha256(b"jgmirror bench").digest() * (small_size // 32 + 1)
    entries = []
    for i in range(count):
        dest = f"d{i // 1000:03}/f{i:06}.bin"
        path = root / dest
        if i % 1000 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        if i % big_every == 0:
            with open(path, "wb") as out:
                out.truncate(big_size)
            entries.append((dest, big_size, big_sha))
        else:
            data = i.to_bytes(8, "little") + block[8:small_size]
            path.write_bytes(data)
            entries.append((dest, small_size, hashlib.sha256(data).hexdigest()))
    index.write_text(json.dumps(entries))
    return entries


def state_scenarios(jg: str, plain: str, small: list[DataFile], f1g: DataFile, wanted: set[str]) -> list[Scenario]:
    """The state database's targets: what a no-op run of a large mirror costs, and
    refreshing items without checksums by conditional requests."""
    quiet = ["--progress", "none", "--quiet"]
    result: list[Scenario] = []
    manifests = OUT / "manifests"

    # No-op sync of 100,000 items holding 10.5 GiB: 100 sparse files of 104 MiB
    # (the bytes a no-op must not read: sparse, so the bench fills no disk) and
    # 99,900 files of 4 KiB. The URLs name files nginx does not have, so a run that
    # sent any request would fail. The state database is made by an untimed sync
    # (which hashes everything once); the warm-up round re-hashes what that sync
    # recorded within the racy window of its creation.
    noop_root = OUT / "state" / "noop100k"
    noop_manifest = manifests / "noop100k.yaml"

    def make_noop_tree() -> None:
        entries = sparse_tree(noop_root, 100_000, 1000, 104 * MiB, 4 * KiB)
        total = sum(size for _, size, _ in entries)
        print(f"   {len(entries):,} files, {total / GiB:.2f} GiB (sparse) under {noop_root}", flush=True)
        write_manifest(noop_manifest, noop_root, [(f"{plain}/absent/{dest}", dest, sha) for dest, _, sha in entries])
        run_quietly([jg, "sync", str(noop_manifest)] + quiet)

    if not wanted or "noop100k" in wanted:
        setup = once(make_noop_tree)
        noop_tools = [
            Tool("jgmirror sync, no-op (100,000 items, 10.5 GiB)", lambda: [jg, "sync", str(noop_manifest)] + quiet,
                 prepare=setup),
            Tool("jgmirror plan + find -printf (reference)", lambda: [
                "sh", "-c", f"\"$1\" plan \"$2\" --quiet >/dev/null && find \"$3\" -printf '%s %T@\\n' >/dev/null",
                "sh", jg, str(noop_manifest), str(noop_root)], prepare=setup),
            Tool("jgmirror plan", lambda: [jg, "plan", str(noop_manifest), "--quiet"], prepare=setup),
            Tool("find ROOT -printf '%s %T@'", lambda: ["find", str(noop_root), "-printf", "%s %T@\n"],
                 prepare=setup),
        ]
        result.append(Scenario("noop100k", "no-op sync of 100,000 items on disk (10.5 GiB, sparse), state database "
                                           "made by an earlier sync", noop_tools,
                               [ratio_target("no-op sync ≤ 1.5 × (plan + find -printf)", noop_tools[0].name,
                                             [noop_tools[1].name], 1.5)],
                               unit=("items/s", 100_000), warmup=1))

    # No-op sync of one verified 1 GiB item (sparse: the quick check never reads
    # it; --rehash, which does, reads zero pages, faster than real data).
    one_root = OUT / "state" / "noop1g"
    one_manifest = manifests / "noop1g.yaml"

    def make_one() -> None:
        path = one_root / "f1g.bin"
        if not path.exists() or path.stat().st_size != GiB:
            shutil.rmtree(one_root, ignore_errors=True)
            one_root.mkdir(parents=True)
            with open(path, "wb") as out:
                out.truncate(GiB)
        write_manifest(one_manifest, one_root, [(f"{plain}/absent/f1g.bin", "f1g.bin", zeros_sha256(GiB))])
        run_quietly([jg, "sync", str(one_manifest)] + quiet)

    if not wanted or "noop1g" in wanted:
        setup = once(make_one)
        one_tools = [
            Tool("jgmirror sync, no-op (verified 1 GiB item)", lambda: [jg, "sync", str(one_manifest)] + quiet,
                 prepare=setup),
            Tool("jgmirror sync --rehash (1 GiB, sparse)", lambda: [jg, "sync", str(one_manifest), "--rehash"] + quiet,
                 prepare=setup),
        ]
        result.append(Scenario("noop1g", "no-op sync of a verified 1 GiB item", one_tools,
                               [Target("no-op ≤ 0.1 s", lambda t: (f"{t[one_tools[0].name].median:.3f} s",
                                                                 t[one_tools[0].name].median <= 0.1))],
                               warmup=1))

    # No-op sync right after the sync that placed a 1 GiB item (issue 33: a placed
    # file is trusted at once). Before every timed run, untimed: the folder is
    # emptied and a sync fetches the file from nginx and places it. The timed run
    # must not read it: its record waited for the file system's clock to pass the
    # file's timestamps, so it is not racy. Models a cron sync that runs again soon
    # after one that brought a large new release file.
    placed_root = DL / "placed1g"
    placed_manifest = write_manifest(manifests / "placed1g.yaml", placed_root,
                                     [(f"{plain}/{f1g.name}", f1g.name, f1g.sha256)])

    def place_1g() -> None:
        fresh(placed_root)()
        run_quietly([jg, "sync", str(placed_manifest)] + quiet)

    if (not wanted or "placed1g" in wanted) and f1g.sha256:
        placed_tools = [
            Tool("jgmirror sync, right after placing 1 GiB", lambda: [jg, "sync", str(placed_manifest)] + quiet,
                 prepare=place_1g),
        ]
        result.append(Scenario("placed1g", "no-op sync right after the sync that placed a 1 GiB item", placed_tools,
                               [Target("no-op ≤ 0.1 s", lambda t: (f"{placed_tools[0].median:.3f} s",
                                                                 placed_tools[0].median <= 0.1))]))

    # Snapshot publishing (issue 33): a 10,000-item set (16 KiB each, 10 folders)
    # where 1 % changed, synced into a tree published in order and into one published
    # as snapshots (`--publish snapshot`: `next` hard-linked from the current
    # snapshot, 100 files placed, `current` swapped). Before every timed run, untimed,
    # each tree is brought back to the first version (100 files fetched), so every
    # timed run is the same change; the check measures what the timed run added to
    # the snapshots folder, each inode once (a hard link costs no data block).
    snap_items = [(f"{plain}/{small[i % 2000].name}", f"d{i // 1000:02}/f{i:05}.bin", small[i % 2000].sha256)
                  for i in range(10_000)]
    snap_changed = [(f"{plain}/{small[(i + 1) % 2000].name}", dest, small[(i + 1) % 2000].sha256)
                    if i % 100 == 0 else (url, dest, sha) for i, (url, dest, sha) in enumerate(snap_items)]
    changed_bytes = sum(small[(i + 1) % 2000].size for i in range(0, 10_000, 100))
    ordered_root, snapshot_root = DL / "snap-ordered", DL / "snap-snapshot"
    snap_first = {root: write_manifest(manifests / f"{root.name}-1.yaml", root, snap_items)
                  for root in (ordered_root, snapshot_root)}
    snap_second = {root: write_manifest(manifests / f"{root.name}-2.yaml", root, snap_changed)
                   for root in (ordered_root, snapshot_root)}
    # The default --keep (3): from the third round on, every run also retires the
    # oldest snapshot, as a cron job's runs do (since issue 33's reuse, it becomes the
    # run's `next`; an earlier build removes its 10,000 links and links 10,000 anew).
    snapshot_flags = ["--publish", "snapshot"]
    growth: list[tuple[int, int]] = []  # each timed snapshot: (its new file bytes, its folders' bytes)
    before: dict[str, dict[tuple[int, int], tuple[bool, int]]] = {}

    def blocks(folder: Path) -> dict[tuple[int, int], tuple[bool, int]]:
        found: dict[tuple[int, int], tuple[bool, int]] = {}
        for top, folders, files in os.walk(folder):
            for name in folders + files:
                info = os.lstat(os.path.join(top, name))
                found[(info.st_dev, info.st_ino)] = (stat.S_ISREG(info.st_mode), info.st_blocks * 512)
        return found

    def back_to_first(root: Path, flags: list[str]) -> Callable[[], None]:
        def prepare() -> None:
            run_quietly([jg, "sync", str(snap_first[root]), "--jobs", "16"] + flags + quiet)
            if flags:
                before["inodes"] = blocks(snapshot_root / "current")
        return prepare

    def measure_growth() -> None:
        # What the new snapshot costs beside the one before it: its files that the
        # previous snapshot does not share (by inode, both still on disk), and its
        # folders. Not "inodes new to the snapshots folder": a run that reuses the
        # expired snapshot frees that one's files while it places the new ones, and
        # ext4 hands the freed inode numbers straight out again.
        after = blocks(snapshot_root / "current")
        added = [value for key, value in after.items() if value[0] and key not in before.get("inodes", {})]
        folders = [size for regular, size in after.values() if not regular]
        growth.append((sum(size for _, size in added), sum(folders)))

    if not wanted or "snapshot10k" in wanted:
        ordered_tool = Tool("jgmirror sync, ordered (10,000, 1 % changed)",
                            lambda: [jg, "sync", str(snap_second[ordered_root]), "--jobs", "16"] + quiet,
                            prepare=back_to_first(ordered_root, []))
        snapshot_tool = Tool("jgmirror sync --publish snapshot (same)",
                             lambda: [jg, "sync", str(snap_second[snapshot_root]), "--jobs", "16"] + snapshot_flags + quiet,
                             prepare=back_to_first(snapshot_root, snapshot_flags), check=measure_growth)

        def disk_growth(tools: dict[str, Tool]) -> tuple[str, bool]:
            files_added = statistics.median(g[0] for g in growth)
            folders_added = statistics.median(g[1] for g in growth)
            return (f"files {files_added / MiB:.2f} MiB for {changed_bytes / MiB:.2f} MiB changed, "
                    f"the snapshot's folders {folders_added / KiB:.0f} KiB",
                    changed_bytes * 0.95 <= files_added <= changed_bytes * 1.05)

        result.append(Scenario("snapshot10k", "10,000 items, 1 % changed: ordered vs snapshot publishing",
                               [ordered_tool, snapshot_tool],
                               [ratio_target("snapshot ≤ 1.2 × ordered", snapshot_tool.name, [ordered_tool.name], 1.2),
                                Target("disk growth of a snapshot = changed bytes (files)", disk_growth)],
                               warmup=1))

    # The same change as a set (issue 33's own words: "a 10,000-file set"): a
    # SHA256SUMS list of 10,000 names in 10 folders, served as symlinks to the small
    # files (v1, and v2 where every 100th name has other bytes). Ordered is the set
    # with `publish: true` (files, then the list); the other is the set's own
    # snapshots (`publish: snapshot`: its folder is a link, swapped once the set is
    # complete). Each timed run is the change v1 → v2 after an untimed run back to v1.
    if not wanted or "setsnapshot10k" in wanted:
        set_roots = {"true": DL / "set-ordered", "snapshot": DL / "set-snapshot"}
        for version in (1, 2):
            served = WWW / "set10k" / f"v{version}"
            lines = []
            for i in range(10_000):
                source = small[(i + (1 if version == 2 and i % 100 == 0 else 0)) % 2000]
                name = f"d{i // 1000:02}/f{i:05}.bin"
                link = served / name
                link.parent.mkdir(parents=True, exist_ok=True)
                if not link.is_symlink():
                    link.symlink_to(WWW / source.name)
                lines.append(f"{source.sha256}  {name}\n")
            (served / "SHA256SUMS").write_text("".join(lines))

        def set_manifest(publish: str, version: int) -> Path:
            path = manifests / f"{set_roots[publish].name}-{version}.yaml"
            path.write_text(f"version: 1\nroot: {set_roots[publish]}\nsets:\n"
                            f"  - sums: {plain}/set10k/v{version}/SHA256SUMS\n    dest: rel/\n    publish: {publish}\n")
            return path

        set_growth: list[int] = []
        set_before: dict[str, dict[tuple[int, int], tuple[bool, int]]] = {}

        def set_back_to_first(publish: str) -> Callable[[], None]:
            def prepare() -> None:
                run_quietly([jg, "sync", str(set_manifest(publish, 1)), "--jobs", "16"] + quiet)
                if publish == "snapshot":
                    set_before["inodes"] = blocks(set_roots["snapshot"] / "rel")
            return prepare

        def set_measure_growth() -> None:
            after = blocks(set_roots["snapshot"] / "rel")
            set_growth.append(sum(size for key, (regular, size) in after.items()
                                  if regular and key not in set_before.get("inodes", {})))

        set_ordered = Tool("jgmirror sync, set with publish: true (10,000, 1 % changed)",
                           lambda: [jg, "sync", str(set_manifest("true", 2)), "--jobs", "16"] + quiet,
                           prepare=set_back_to_first("true"))
        set_snapshot = Tool("jgmirror sync, set with publish: snapshot (same)",
                            lambda: [jg, "sync", str(set_manifest("snapshot", 2)), "--jobs", "16"] + quiet,
                            prepare=set_back_to_first("snapshot"), check=set_measure_growth)
        # Each new list is a new file too: 10,000 lines of 84 bytes.
        list_bytes = (WWW / "set10k" / "v2" / "SHA256SUMS").stat().st_size

        def set_disk_growth(tools: dict[str, Tool]) -> tuple[str, bool]:
            added = statistics.median(set_growth)
            expected = changed_bytes + list_bytes
            return (f"files {added / MiB:.2f} MiB for {expected / MiB:.2f} MiB changed (100 files and the list)",
                    expected * 0.95 <= added <= expected * 1.05)

        result.append(Scenario("setsnapshot10k", "a 10,000-file set, 1 % changed: publish: true vs publish: snapshot",
                               [set_ordered, set_snapshot],
                               [ratio_target("set snapshot ≤ 1.2 × ordered", set_snapshot.name, [set_ordered.name], 1.2),
                                Target("disk growth of a set snapshot = changed bytes", set_disk_growth)],
                               warmup=1))

    # Peak RSS of a 100,000-item first sync (16 KiB each from nginx, 100 folders),
    # of the run right after it (every placed file's record waited for the file
    # system's clock to pass it, so nothing is read; before issue 33 every record was
    # racy and every file hashed once more) and of a no-op after that; the state
    # database's bytes per item.
    state_dir = DL / "state100k"
    state_manifest = write_manifest(manifests / "state100k.yaml", state_dir,
                                    [(f"{plain}/{small[i % 2000].name}", f"d{i // 1000:03}/f{i:06}.bin",
                                      small[i % 2000].sha256) for i in range(100_000)])
    database = state_dir / ".jgmirror" / "state.sqlite"

    def database_bytes() -> int:
        return sum(p.stat().st_size for p in (database, Path(f"{database}-wal")) if p.exists())

    first = Tool("jgmirror sync, first (100,000 × 16 KiB)", lambda: [jg, "sync", str(state_manifest), "--jobs", "16"] + quiet,
                 prepare=fresh(state_dir))
    again = Tool("jgmirror sync, right after it",
                 lambda: [jg, "sync", str(state_manifest), "--jobs", "16"] + quiet)
    settled = Tool("jgmirror sync, no-op (100,000, settled)", lambda: [jg, "sync", str(state_manifest), "--jobs", "16"] + quiet)
    result.append(Scenario("state100k", "100,000 items × 16 KiB: first sync, the run right after it, a settled no-op; "
                                        "state database size",
                           [first, again, settled],
                           [Target(f"{first.name} peak RSS ≤ 150 MiB",
                                   lambda t: (f"{first.peak_rss_mib:.1f} MiB", first.peak_rss_mib <= 150)),
                            Target(f"{again.name} peak RSS ≤ 150 MiB",
                                   lambda t: (f"{again.peak_rss_mib:.1f} MiB", again.peak_rss_mib <= 150)),
                            Target(f"{settled.name} peak RSS ≤ 150 MiB",
                                   lambda t: (f"{settled.peak_rss_mib:.1f} MiB", settled.peak_rss_mib <= 150)),
                            Target("state database ≤ 512 bytes per item",
                                   lambda t: (f"{database_bytes() / 100_000:.0f} B/item ({database_bytes() / MiB:.1f} MiB)",
                                              database_bytes() / 100_000 <= 512))],
                           rounds=1))

    # 2000 unchanged items without checksums: one conditional request each, 304 and
    # no body. jgmirror asks with the recorded ETag (If-None-Match); curl -z FILE
    # asks with the file's mtime (If-Modified-Since), which nginx answers 304 only
    # when it equals the file's Last-Modified, so curl's copy is made with -R.
    cond_dir = DL / "cond"
    curl_cond_dir = DL / "cond-curl"
    cond_manifest = manifests / "cond2000.yaml"
    cond_manifest.write_text(f"version: 1\nroot: {cond_dir}\nitems:\n" + "".join(
        f"  - url: {plain}/{s.name}\n    dest: {Path(s.name).name}\n" for s in small))
    cond_report = OUT / "cond2000-report.json"
    fetch_list = manifests / "cond2000-fetch.curl"
    fetch_list.write_text("".join(f'url = "{plain}/{s.name}"\noutput = "{curl_cond_dir}/{Path(s.name).name}"\n'
                                  for s in small))
    cond_list = manifests / "cond2000.curl"
    cond_list.write_text("".join(f'url = "{plain}/{s.name}"\noutput = "{curl_cond_dir}/{Path(s.name).name}"\n'
                                 f'time-cond = "{curl_cond_dir}/{Path(s.name).name}"\n' for s in small))

    def make_cond() -> None:
        fresh(cond_dir)()
        fresh(curl_cond_dir)()
        run_quietly([jg, "sync", str(cond_manifest), "--jobs", "16"] + quiet)
        run_quietly(["curl", "-sSf", "-R", "--parallel", "--parallel-max", "16", "--create-dirs", "-K", str(fetch_list)])
        # No wait for the racy window: a file jgmirror placed is recorded once the file
        # system's clock has passed it, so its ETag is used at once (issue 33).

    def all_not_modified() -> None:
        report = json.loads(cond_report.read_text())
        wrong = [i for i in report["items"] if i["status"] != "unchanged" or i.get("bytes_downloaded", 0) != 0]
        if wrong or len(report["items"]) != len(small):
            raise RuntimeError(f"{len(wrong)} items were not 304 without a body: {wrong[:2]}")

    def curl_kept() -> None:
        has_files(curl_cond_dir, small)()

    setup = once(make_cond)
    cond_tools = [
        Tool("jgmirror sync --jobs 16 (2000 conditional)",
             lambda: [jg, "sync", str(cond_manifest), "--jobs", "16", "--report", str(cond_report)] + quiet,
             all_not_modified, setup),
        Tool("curl -Z --parallel-max 16 -z FILE (2000)",
             lambda: ["curl", "-sSf", "-Z", "--parallel-max", "16", "-K", str(cond_list)], curl_kept, setup),
    ]
    result.append(Scenario("cond2000", "2000 unchanged items without checksums: a conditional request each (304)",
                           cond_tools,
                           [ratio_target("jgmirror ≤ 1.0 × curl -Z -z FILE", cond_tools[0].name, [cond_tools[1].name], 1.0)],
                           unit=("items/s", len(small)), warmup=1))
    return result


# ---------------------------------------------------------------- output


def as_json(ran: list[Scenario], reps: int) -> dict:
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "rounds": reps,
        "scenarios": [{
            "key": s.key, "title": s.title, "rounds": s.reps(reps), "warmup_rounds": s.warmup,
            "tools": [{"name": t.name, "median_s": round(t.median, 4),
                       "samples_s": [round(x.seconds, 4) for x in t.samples],
                       "peak_rss_mib": round(t.peak_rss_mib, 1),
                       **{key: [x.get(key) for x in t.traffic] for key in (t.traffic[0] if t.traffic else {})}}
                      for t in s.tools],
            **({"reference": {"name": s.reference[0], "seconds": round(s.reference[1], 4)}} if s.reference else {}),
            "targets": [dict(zip(("target", "measured", "met"), (g.text,) + g.holds({t.name: t for t in s.tools})))
                        for g in s.targets],
        } for s in ran],
    }


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, {os.uname().sysname}"


def as_svg(results: dict) -> str:
    """Horizontal bars of median time per tool, one group per scenario, scaled within the group."""
    width, label, bar_max, row = 860, 270, 460, 22
    parts, y = [], 40
    for scenario in results["scenarios"]:
        parts.append(f'<text x="10" y="{y}" font-weight="bold">{escape(scenario["title"])}</text>')
        y += 8
        slowest = max(t["median_s"] for t in scenario["tools"]) or 1
        for tool in scenario["tools"]:
            length = max(2, bar_max * tool["median_s"] / slowest)
            colour = "#2b7bb9" if tool["name"].startswith("jgmirror") else "#b0b0b0"
            parts.append(f'<text x="{label - 8}" y="{y + 15}" text-anchor="end">{escape(tool["name"])}</text>'
                         f'<rect x="{label}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" fill="{colour}"/>'
                         f'<text x="{label + length + 6:.1f}" y="{y + 15}">{tool["median_s"]:.2f} s · '
                         f'{tool["peak_rss_mib"]:.0f} MiB</text>')
            y += row
        y += 22
    header = (f'<text x="10" y="20" font-size="15" font-weight="bold">jgmirror vs peers — median wall time of '
              f'interleaved rounds, shorter is better ({escape(results["date"])}, '
              f'{escape(results["machine"])})</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" font-family="sans-serif" '
            f'font-size="12"><rect width="100%" height="100%" fill="white"/>{header}{"".join(parts)}</svg>\n')


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jgmirror", required=True, help="the jgmirror binary (release build)")
    parser.add_argument("--reps", type=int, default=3, help="interleaved rounds per scenario (median reported)")
    parser.add_argument("--only", default="", help="comma-separated scenario keys")
    parser.add_argument("--quick", action="store_true", help="skip the 4 GiB file")
    parser.add_argument("--publish", action="store_true", help="copy results.json/.svg next to this script")
    parser.add_argument("--serve", action="store_true", help="start nginx with the data, print its URLs, wait")
    parser.add_argument("--baseline", help="an earlier jgmirror binary: its jgmirror rows run in the same rounds, "
                        "interleaved with this one's, named 'baseline …' (before/after in one run)")
    options = parser.parse_args()

    nginx = Nginx()
    nginx.start()
    try:
        wanted = set(filter(None, options.only.split(",")))
        all_scenarios = scenarios(options.jgmirror, nginx, options.quick, wanted)
        if options.baseline:
            # The same scenarios built around the earlier binary: only its jgmirror tools
            # join, so the peers run once and every tool shares each round's load.
            for scenario, base in zip(all_scenarios, scenarios(options.baseline, nginx, options.quick, wanted)):
                assert scenario.key == base.key
                scenario.tools += [replace(tool, name="baseline " + tool.name) for tool in base.tools
                                   if tool.name.startswith("jgmirror")]
        if options.serve:
            for server in nginx.ports:
                print(f"{server:>10}: {nginx.url(server)}")
            print(f"CA: {nginx.prefix / 'certs' / 'ca.crt'}   data: {WWW}   (Ctrl-C stops)", flush=True)
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return
        ran = [s for s in all_scenarios if not wanted or s.key in wanted]
        settle()
        for scenario in ran:
            run(scenario, options.reps)
        results = as_json(ran, options.reps)
        if wanted and options.publish and (HERE / "results.json").exists():
            # A partial run replaces its scenarios in the published results, keeping the rest.
            # A run of a subset builds only its own scenarios, so the published order is kept
            # and scenarios new to it go last.
            published = json.loads((HERE / "results.json").read_text())
            fresh = {s["key"]: s for s in results["scenarios"]}
            merged = [fresh.pop(s["key"]) if s["key"] in fresh else {"rounds": published["rounds"], **s}
                      for s in published["scenarios"]]
            results["scenarios"] = merged + list(fresh.values())
        (OUT / "results.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        (OUT / "results.svg").write_text(as_svg(results))
        print(f"\nwrote {OUT / 'results.json'} and {OUT / 'results.svg'}")
        if options.publish:
            shutil.copy(OUT / "results.json", HERE / "results.json")
            shutil.copy(OUT / "results.svg", HERE / "results.svg")
            publish_figures(results, HERE / "RESULTS.md")
    finally:
        for link in LINKS:
            link.stop()
        nginx.stop()
        clean_up()


FIGURES_START, FIGURES_END = "<!-- figures: written by bench.py --publish -->", "<!-- /figures -->"


def publish_figures(results: dict, path: Path) -> None:
    """Replaces the measured tables in RESULTS.md; the prose around them is written by hand."""
    lines = [FIGURES_START, ""]
    for scenario in results["scenarios"]:
        rounds = scenario.get("rounds", results["rounds"])
        warmup = scenario.get("warmup_rounds", 0)
        after = f", after {warmup} untimed warm-up round{'s' if warmup > 1 else ''}" if warmup else ""
        lines += [f"### {scenario['title']}", "", f"Median of {rounds} interleaved rounds{after}.", "",
                  "| tool | median s | runs (s) | peak RSS |", "|---|---:|---|---:|"]
        for tool in scenario["tools"]:
            runs = ", ".join(f"{sample:.2f}" for sample in tool["samples_s"])
            if "requests" in tool:
                runs += " (requests: " + ", ".join(map(str, tool["requests"])) + ")"
            if "server_bytes" in tool:
                runs += ("; MB sent: " + ", ".join(f"{b / 1e6:.2f}" for b in tool["server_bytes"])
                         + "; MB placed: " + ", ".join(f"{b / 1e6:.2f}" for b in tool["placed_bytes"]))
            if "apt_runs" in tool:
                runs += f"; apt runs failed: {sum(tool['apt_failures'])} of {sum(tool['apt_runs'])}"
            if "held_failures" in tool:
                runs += f"; held clients failed: {sum(tool['held_failures'])} of {len(tool['held_failures'])}"
            lines.append(f"| {tool['name']} | {tool['median_s']:.3f} | {runs} | {tool['peak_rss_mib']:.1f} MiB |")
        if "reference" in scenario:
            lines.append(f"| *{scenario['reference']['name']}* | {scenario['reference']['seconds']:.3f} | | |")
        lines.append("")
        for target in scenario["targets"]:
            lines.append(f"- target {target['target']}: **{target['measured']}** — {'met' if target['met'] else 'MISSED'}")
        lines.append("")
    lines.append(FIGURES_END)
    text = path.read_text() if path.exists() else ""
    if FIGURES_START in text and FIGURES_END in text:
        before, rest = text.split(FIGURES_START, 1)
        text = before + "\n".join(lines) + rest.split(FIGURES_END, 1)[1]
    else:
        text += "\n## All figures\n\n" + "\n".join(lines) + "\n"
    path.write_text(text)


if __name__ == "__main__":
    main()
