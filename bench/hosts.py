"""The host rows of bench/bench.py (issue 31): a run against servers that refuse,
never answer, restart, drip a byte a second or ask to be left alone, each played by a
small fault server on 127.0.0.1 port 0, and two mirrors that each cap a client.

Fault servers run in a thread of the bench process (asyncio), serve bench/out/www
and log every connection and request with its time; a row's targets are read from
those logs, from `strace` of the run (connection attempts to a closed port) and from
jgmirror's report. Selected by key through bench/run.sh, like every other row:

    bench/run.sh --only hosts-refused,hosts-blackhole,hosts-restart,hosts-drip,hosts-drip-norange
    bench/run.sh --only hosts-mirror48,hosts-mirror200,hosts-429,hosts-503date,mirrors2
"""

import asyncio
import email.utils
import json
import math
import re
import socket
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from bench import (DL, OUT, WWW, DataFile, LinkProxy, Nginx, Scenario, Target, Tool, fresh, has_size,
                   ratio_target, write_manifest)

KEYS = {"hosts-refused", "hosts-blackhole", "hosts-restart", "hosts-drip", "hosts-drip-norange", "hosts-mirror48",
        "hosts-mirror200",
        "hosts-429", "hosts-503date", "mirrors2"}
GRACE = 30.0  # host_grace's default
TIMEOUT = 30.0  # timeout's default
QUIET = ["--progress", "none", "--quiet"]


# ---------------------------------------------------------------- fault servers


@dataclass
class Request:
    at: float  # time.monotonic() when its head arrived
    method: str
    path: str
    status: int


@dataclass
class Connection:
    opened: float
    first_byte: Optional[float] = None  # of a body the server sent (drip)
    closed: Optional[float] = None


class FaultServer:
    """An HTTP/1.1 server of bench/out/www on 127.0.0.1 with one fault:

    - `serve`: none (keep-alive, HEAD, one byte range);
    - `blackhole`: accepts, reads, never answers;
    - `drip`: answers 200 with the file's length, then sends one byte a second;
    - `cool`: from the first request until `wait` seconds later every request gets
      `status` with `Retry-After` (seconds, or an HTTP date when `date` is set: then
      the end is rounded up to a whole second of the wall clock, as the date says);
      after it, files;
    - `outage`: after `after` requests, closes its listening socket and every
      connection (a restart: connections are refused) for `down` seconds, then
      serves again on the same port.

    With `ranges` false it answers every request with the whole file (200), as a
    server that does not do byte ranges. `reset()` before every run clears the logs
    and the fault's clock."""

    def __init__(self, mode: str, *, status: int = 429, wait: float = 4.0, date: bool = False,
                 after: int = 100, down: float = 20.0, ranges: bool = True) -> None:
        self.mode, self.status, self.wait, self.date, self.after, self.down = mode, status, wait, date, after, down
        self.ranges = ranges
        self.loop = asyncio.new_event_loop()
        self.server: Optional[asyncio.base_events.Server] = None
        self.writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self.reset()
        started = threading.Event()
        threading.Thread(target=self._thread, args=(started,), daemon=True).start()
        started.wait()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self) -> None:
        self.connections: list[Connection] = []
        self.requests: list[Request] = []
        self.cool_from: Optional[float] = None  # when the first cooling answer was sent
        self.cool_until: Optional[float] = None  # monotonic
        self.outage: Optional[tuple[float, float]] = None  # (from, to), monotonic
        self.served = 0

    def _thread(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._listen())
        started.set()
        self.loop.run_forever()

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, reuse_address=True,
                                                 backlog=1024)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _restart(self) -> None:
        start = time.monotonic()
        self.server.close()
        for writer in list(self.writers):
            writer.transport.abort()
        await asyncio.sleep(self.down)
        await self._listen()
        self.outage = (start, time.monotonic())

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(time.monotonic())
        self.connections.append(connection)
        self.writers.add(writer)
        try:
            if self.mode == "blackhole":
                while await reader.read(65536):
                    pass
                return
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not await self._answer(head.decode("latin-1"), reader, writer, connection):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            connection.closed = time.monotonic()
            self.writers.discard(writer)
            writer.close()

    async def _answer(self, head: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      connection: Connection) -> bool:
        """Answers one request; False when the connection is to end."""
        now = time.monotonic()
        lines = head.split("\r\n")
        method, path = lines[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        file = WWW / path.lstrip("/").split("?")[0]
        if self.mode == "cool" and (self.cool_until is None or now < self.cool_until):
            if self.cool_until is None:
                self.cool_from = now
                if self.date:
                    end = math.ceil(time.time() + self.wait)
                    self.cool_until = now + (end - time.time())
                    self.retry_after = email.utils.formatdate(end, usegmt=True)
                else:
                    self.cool_until = now + self.wait
                    self.retry_after = str(int(self.wait))
            self.requests.append(Request(now, method, path, self.status))
            writer.write(f"HTTP/1.1 {self.status} Busy\r\nRetry-After: {self.retry_after}\r\n"
                         f"Content-Length: 0\r\n\r\n".encode())
            await writer.drain()
            return True
        if not file.is_file():
            self.requests.append(Request(now, method, path, 404))
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return True
        data = file.read_bytes()
        status, body, extra = 200, data, ""
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", headers.get("range", ""))
        if match and self.ranges:
            first = int(match.group(1))
            last = min(int(match.group(2)) if match.group(2) else len(data) - 1, len(data) - 1)
            status, body = 206, data[first:last + 1]
            extra = f"Content-Range: bytes {first}-{last}/{len(data)}\r\n"
        self.requests.append(Request(now, method, path, status))
        writer.write(f"HTTP/1.1 {status} {'OK' if status == 200 else 'Partial Content'}\r\n"
                     f"Content-Length: {len(body)}\r\nAccept-Ranges: bytes\r\nETag: \"{len(data)}\"\r\n"
                     f"{extra}\r\n".encode())
        if method == "HEAD":
            await writer.drain()
            return True
        if self.mode == "drip":
            # A byte a second; the client's close is seen within 0.1 s (EOF on the reader).
            for byte in body:
                writer.write(bytes([byte]))
                await writer.drain()
                if connection.first_byte is None:
                    connection.first_byte = time.monotonic()
                for _ in range(10):
                    await asyncio.sleep(0.1)
                    if reader.at_eof():
                        return False
            return True
        writer.write(body)
        await writer.drain()
        self.served += 1
        if self.mode == "outage" and self.served == self.after and self.outage is None:
            self.outage = (now, math.inf)
            asyncio.ensure_future(self._restart())
        return True


class ClosedPort:
    """A port bound and never listened on: a connection to it is refused at once (RST),
    and no other process takes the port while the bench runs."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# ---------------------------------------------------------------- measuring helpers


def exits(code: Optional[int], cmd: list[str]) -> list[str]:
    """cmd, made to exit 0 when it exits `code` (a run that must fail; None: any code
    but 0), 1 otherwise."""
    test = f"-eq {code}" if code is not None else "-ne 0"
    return ["sh", "-c", f'"$@"; [ $? {test} ]', "sh"] + cmd


def traced(log: Path, cmd: list[str]) -> list[str]:
    """cmd under strace, logging its connect() calls (seccomp-bpf: no other syscall stops)."""
    return ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o", str(log)] + cmd


def connects(log: Path, port: int) -> int:
    """connect() calls to 127.0.0.1:port in an strace log: connection attempts."""
    text = log.read_text() if log.exists() else ""
    return len(re.findall(rf"connect\(\d+, {{sa_family=AF_INET, sin_port=htons\({port}\)", text))


def report_items(path: Path) -> list[dict]:
    return json.loads(path.read_text())["items"]


def all_ok(report: Path, count: int) -> Callable[[], None]:
    def check() -> None:
        items = report_items(report)
        bad = [i for i in items if i["status"] not in ("downloaded", "verified", "unchanged")]
        if bad or len(items) != count:
            raise RuntimeError(f"{len(bad)} of {len(items)} items not done: {bad[:2]}")
    return check


def median_of(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def under(text: str, figure: Callable[[], float], limit: float) -> Target:
    return Target(text, lambda tools: (f"{figure():.2f} s", figure() <= limit))


# ---------------------------------------------------------------- rows


@dataclass
class Context:
    jg: str
    nginx: Nginx
    items: list[DataFile]  # 200 × 16 KiB
    f48: DataFile
    links: list[LinkProxy]  # stopped when the bench ends
    root: Path = DL / "hosts"

    def manifest(self, name: str, base: str, mirror: Optional[str] = None) -> Path:
        """The 200 items from `base`, each with its mirror under `mirror`."""
        lines = [f"version: 1\nroot: {self.root}\nitems:\n"]
        for spec in self.items:
            lines.append(f"  - url: {base}/{spec.name}\n    dest: {Path(spec.name).name}\n    sha256: {spec.sha256}\n")
            if mirror:
                lines.append(f"    mirrors: [{mirror}/{spec.name}]\n")
        path = OUT / "manifests" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
        return path

    def sync(self, manifest: Path, report: Path, *extra: str) -> list[str]:
        return [self.jg, "sync", str(manifest), "--report", str(report), *extra] + QUIET


def failed_with(report: Path, code: str) -> None:
    codes = {i["error"]["code"] for i in report_items(report) if i.get("error")}
    if codes != {code} or any(i["status"] != "failed" for i in report_items(report)):
        raise RuntimeError(f"expected every item to fail with {code}, got {codes}")


def refused(c: Context) -> Scenario:
    """200 items whose host refuses every connection (a closed port: RST at once),
    default options. Every run is under strace; its connect() calls to the port are
    the connection attempts."""
    closed = ClosedPort()
    manifest = c.manifest("hosts-refused.yaml", closed.url())
    report, trace = OUT / "hosts-refused.json", OUT / "hosts-refused.strace"
    attempts: list[int] = []
    aria_attempts: list[int] = []
    aria_list = OUT / "manifests" / "hosts-refused.aria2"
    aria_list.write_text("".join(f"{closed.url()}/{s.name}\n  dir={c.root}\n  out={Path(s.name).name}\n"
                                 for s in c.items))

    def check() -> None:
        attempts.append(connects(trace, closed.port))
        failed_with(report, "host_down")

    tools = [
        Tool("jgmirror sync (defaults)", lambda: traced(trace, exits(1, c.sync(manifest, report))), check,
             fresh(c.root)),
        Tool("aria2c -j16 -i (defaults: 5 tries)", lambda: traced(trace, exits(None, [
            "aria2c", "-q", "-j16", "--allow-overwrite=true", "--auto-file-renaming=false", "-i", str(aria_list)])),
             lambda: aria_attempts.append(connects(trace, closed.port)), fresh(c.root)),
    ]
    return Scenario("hosts-refused", "200 items, the host refuses every connection (closed port), default options",
                    tools,
                    [under(f"jgmirror ≤ host_grace + 5 s = {GRACE + 5:.0f} s", lambda: tools[0].median, GRACE + 5),
                     Target("jgmirror ≤ 20 connection attempts in all (connect() calls, most of any run)",
                            lambda t: (f"{max(attempts)} (runs: {', '.join(map(str, attempts))}; "
                                       f"aria2c: {', '.join(map(str, aria_attempts))})", max(attempts) <= 20))])


def blackhole(c: Context) -> Scenario:
    """200 items whose host accepts every connection and never answers."""
    hole = FaultServer("blackhole")
    manifest = c.manifest("hosts-blackhole.yaml", hole.url())
    report = OUT / "hosts-blackhole.json"
    accepted: list[int] = []

    def check() -> None:
        accepted.append(len(hole.connections))
        failed_with(report, "host_down")

    tools = [Tool("jgmirror sync (defaults)", lambda: exits(1, c.sync(manifest, report)), check,
                  lambda: (fresh(c.root)(), hole.reset()))]
    return Scenario("hosts-blackhole", "200 items, the host accepts every connection and never answers, "
                                       "default options", tools,
                    [under("jgmirror ≤ 90 s", lambda: tools[0].median, 90),
                     Target("connections accepted (most of any run)",
                            lambda t: (f"{max(accepted)} (runs: {', '.join(map(str, accepted))})", True))])


def restart(c: Context) -> Scenario:
    """200 items from a host that restarts after serving 100 of them: its listening
    socket and every connection closed for 20 s (connections refused), then back."""
    flaky = FaultServer("outage", after=100, down=20.0)
    manifest = c.manifest("hosts-restart.yaml", flaky.url())
    report = OUT / "hosts-restart.json"
    after_outage: list[float] = []

    def check() -> None:
        all_ok(report, len(c.items))()
        if not flaky.outage or flaky.outage[1] == math.inf:
            raise RuntimeError("the server's outage did not happen or did not end")
        # The first request that reached the host after it came back, seconds after.
        back = [r.at for r in flaky.requests if r.at >= flaky.outage[1]]
        after_outage.append(min(back) - flaky.outage[1] if back else math.nan)

    tools = [Tool("jgmirror sync (defaults)", lambda: c.sync(manifest, report), check,
                  lambda: (fresh(c.root)(), flaky.reset()))]
    return Scenario("hosts-restart", "200 items, the host restarts after 100: refused for 20 s, then back, "
                                     "default options", tools,
                    [Target("every item done (exit 0, report)", lambda t: ("all 200", True)),
                     Target("first request after the host came back (median)",
                            lambda t: (f"{median_of(after_outage):.2f} s later", True))])


def drip(c: Context, key: str, ranges: bool) -> Scenario:
    """One 16 KiB item whose origin sends its head and then one byte a second, with a
    mirror on nginx; the origin does byte ranges or not."""
    server = FaultServer("drip", ranges=ranges)
    spec = c.items[0]
    manifest = write_manifest(OUT / "manifests" / f"{key}.yaml", c.root,
                              [(f"{server.url()}/{spec.name}", Path(spec.name).name, spec.sha256)])
    manifest.write_text(manifest.read_text() + f"    mirrors: [{c.nginx.url('plain')}/{spec.name}]\n")
    report = OUT / f"{key}.json"
    cuts: list[float] = []

    def check() -> None:
        all_ok(report, 1)()
        deadline = time.monotonic() + 2  # the server sees a close within 0.1 s
        while time.monotonic() < deadline and not all(n.closed for n in server.connections):
            time.sleep(0.05)
        cut = [n.closed - n.first_byte for n in server.connections if n.first_byte and n.closed]
        if not cut:
            raise RuntimeError("no dripping connection was cut")
        cuts.append(max(cut))

    tools = [Tool("jgmirror sync (defaults), 1 byte/s origin + nginx mirror", lambda: c.sync(manifest, report),
                  check, lambda: (fresh(c.root)(), server.reset()))]
    title = "one 16 KiB item from an origin sending 1 byte/s" + ("" if ranges else " without byte ranges")
    return Scenario(key, title + ", with a live mirror, default options", tools,
                    [under(f"the dripping connection cut ≤ timeout + 5 s = {TIMEOUT + 5:.0f} s after its first "
                           "byte (longest)", lambda: max(cuts), TIMEOUT + 5),
                     under("the item done from the mirror ≤ timeout + 5 s", lambda: tools[0].median, TIMEOUT + 5)])


def mirror48(c: Context) -> Scenario:
    """48 MiB, 8 connections, from a mirror behind a WAN link (each TCP connection
    capped at 4 MB/s, 50 ms round trip): its primary a closed port, or no primary."""
    closed = ClosedPort()
    link = LinkProxy(c.nginx.ports["plain"], 4_000_000, 0.05)
    c.links.append(link)
    out = DL / "file.bin"
    mirror = f"{link.url()}/{c.f48.name}"

    def one(name: str, url: str, mirrors: list[str]) -> Path:
        path = OUT / "manifests" / name
        path.write_text(f"version: 1\nroot: {DL}\nitems:\n  - url: {url}\n    dest: {out.name}\n"
                        f"    sha256: {c.f48.sha256}\n    connections: 8\n"
                        + (f"    mirrors: [{', '.join(mirrors)}]\n" if mirrors else ""))
        return path

    both = one("hosts-mirror48.yaml", f"{closed.url()}/{c.f48.name}", [mirror])
    alone = one("hosts-mirror48-alone.yaml", mirror, [])
    aria = ["aria2c", "-q", "-x8", "-s8", "-k1M", "--allow-overwrite=true", "--auto-file-renaming=false",
            f"--checksum=sha-256={c.f48.sha256}", "-d", str(DL), "-o", out.name]
    done = has_size(out, c.f48.size)
    tools = [
        Tool("jgmirror sync, primary refuses + mirror", lambda: [c.jg, "sync", str(both)] + QUIET, done, fresh(out),
             link=link),
        Tool("jgmirror sync, mirror only", lambda: [c.jg, "sync", str(alone)] + QUIET, done, fresh(out), link=link),
        Tool("aria2c -x8 -s8 -k1M, primary refuses + mirror",
             lambda: aria + [f"{closed.url()}/{c.f48.name}", mirror], done, fresh(out), link=link),
        Tool("aria2c -x8 -s8 -k1M, mirror only", lambda: aria + [mirror], done, fresh(out), link=link),
    ]
    return Scenario("hosts-mirror48", "48 MiB, 8 connections, primary refuses, one mirror behind a link of 4 MB/s "
                                      "per connection and 50 ms", tools,
                    [ratio_target("jgmirror ≤ 1.1 × its mirror-only time", tools[0].name, [tools[1].name], 1.1)])


def mirror200(c: Context) -> Scenario:
    """200 × 16 KiB, each item's primary a closed port and a mirror on nginx, 16 in flight."""
    closed = ClosedPort()
    plain = c.nginx.url("plain")
    manifest = c.manifest("hosts-mirror200.yaml", closed.url(), mirror=plain)
    report = OUT / "hosts-mirror200.json"
    aria_list = OUT / "manifests" / "hosts-mirror200.aria2"
    aria_list.write_text("".join(f"{closed.url()}/{s.name}\t{plain}/{s.name}\n  dir={c.root}\n"
                                 f"  out={Path(s.name).name}\n  checksum=sha-256={s.sha256}\n" for s in c.items))
    tools = [
        Tool("jgmirror sync --jobs 16", lambda: c.sync(manifest, report, "--jobs", "16"), all_ok(report, len(c.items)),
             fresh(c.root)),
        Tool("aria2c -j16 -i (two URIs per item, checksums)", lambda: [
            "aria2c", "-q", "-j16", "--allow-overwrite=true", "--auto-file-renaming=false", "-i", str(aria_list)],
             prepare=fresh(c.root), deletes_files=True),
    ]
    return Scenario("hosts-mirror200", "200 items × 16 KiB, each primary refuses, each with a live mirror, "
                                       "16 in flight", tools,
                    [ratio_target("jgmirror ≤ 1.5 × aria2c", tools[0].name, [tools[1].name], 1.5)], warmup=1)


def cooling(c: Context, key: str, title: str, server: FaultServer) -> Scenario:
    """200 × 16 KiB from a host that answers its first request, and every request
    until the time it names, with 429 or 503 and Retry-After; files after that."""
    manifest = c.manifest(f"{key}.yaml", server.url())
    report = OUT / f"{key}.json"
    early: list[int] = []
    wave: list[int] = []

    def check() -> None:
        all_ok(report, len(c.items))()
        # Requests already on their way when the first refusal was sent get it too;
        # one that arrived 0.2 s after it, before the time, is early.
        first, until = server.cool_from, server.cool_until
        wave.append(sum(1 for r in server.requests if r.at < until))
        early.append(sum(1 for r in server.requests if first + 0.2 <= r.at < until))

    tools = [Tool("jgmirror sync (defaults)", lambda: c.sync(manifest, report), check,
                  lambda: (fresh(c.root)(), server.reset()))]
    return Scenario(key, title, tools,
                    [Target("zero requests before the time (from 0.2 s after the first refusal; most of any run)",
                            lambda t: (f"{max(early)}; refused in all, per run: {', '.join(map(str, wave))}",
                                       max(early) == 0)),
                     Target("every item done after it (exit 0, report)", lambda t: ("all 200", True))])


def mirrors2(c: Context) -> Scenario:
    """48 MiB, 8 connections, over two mirrors that each cap a client at 8 MB/s (all
    its connections together), 50 ms round trip: the limit is the sum, 16 MB/s."""
    first = LinkProxy(c.nginx.ports["plain"], 1e9, 0.05, client_rate=8e6)
    second = LinkProxy(c.nginx.ports["plain"], 1e9, 0.05, client_rate=8e6)
    c.links.extend([first, second])
    out = DL / "file.bin"
    urls = [f"{first.url()}/{c.f48.name}", f"{second.url()}/{c.f48.name}"]
    manifest = OUT / "manifests" / "mirrors2.yaml"
    manifest.write_text(f"version: 1\nroot: {DL}\nitems:\n  - url: {urls[0]}\n    mirrors: [{urls[1]}]\n"
                        f"    dest: {out.name}\n    sha256: {c.f48.sha256}\n    connections: 8\n")
    limit = c.f48.size / 16e6 + 2 * 0.05
    done = has_size(out, c.f48.size)
    tools = [
        Tool("jgmirror sync, two mirrors", lambda: [c.jg, "sync", str(manifest)] + QUIET, done, fresh(out)),
        Tool("axel -n 8, two URLs", lambda: ["axel", "-q", "-n", "8", "-o", str(out)] + urls, done, fresh(out)),
        Tool("aria2c -x8 -s8 -k1M, two URIs", lambda: [
            "aria2c", "-q", "-x8", "-s8", "-k1M", "--allow-overwrite=true", "--auto-file-renaming=false",
            "-d", str(DL), "-o", out.name] + urls, done, fresh(out)),
    ]
    return Scenario("mirrors2", "48 MiB, 8 connections, two mirrors each capping a client at 8 MB/s, 50 ms round trip",
                    tools,
                    [Target("jgmirror ≤ 1.02 × the sum's time (48 MiB / 16 MB/s + 2 RTT)",
                            lambda t: (f"{tools[0].median / limit:.2f}×", tools[0].median <= 1.02 * limit))],
                    reference=("48 MiB / 16 MB/s + 2 RTT", limit))


def scenarios(jg: str, nginx: Nginx, small: list[DataFile], f48: DataFile, wanted: set[str],
              links: list[LinkProxy]) -> list[Scenario]:
    c = Context(jg, nginx, small[:200], f48, links)
    rows: dict[str, Callable[[], Scenario]] = {
        "hosts-refused": lambda: refused(c),
        "hosts-blackhole": lambda: blackhole(c),
        "hosts-restart": lambda: restart(c),
        "hosts-drip": lambda: drip(c, "hosts-drip", ranges=True),
        "hosts-drip-norange": lambda: drip(c, "hosts-drip-norange", ranges=False),
        "hosts-mirror48": lambda: mirror48(c),
        "hosts-mirror200": lambda: mirror200(c),
        "hosts-429": lambda: cooling(c, "hosts-429", "200 items × 16 KiB, the host answers 429 with Retry-After: 4 "
                                                    "(seconds), default options",
                                     FaultServer("cool", status=429, wait=4)),
        "hosts-503date": lambda: cooling(c, "hosts-503date", "200 items × 16 KiB, the host answers 503 with "
                                                            "Retry-After as an HTTP date 4–5 s ahead, default options",
                                         FaultServer("cool", status=503, wait=4, date=True)),
        "mirrors2": lambda: mirrors2(c),
    }
    return [make() for key, make in rows.items() if not wanted or key in wanted]
