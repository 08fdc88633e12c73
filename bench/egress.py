#!/usr/bin/env python3
"""What each tool costs the server: requests and body bytes from the server's own log.

Starts nginx and Apache on loopback with access logs (nginx `$body_bytes_sent`, what
it wrote to the socket; Apache mod_logio `%O`, bytes actually sent, headers
included, even for an aborted request), and a paced link (bench/linkproxy.py: each
TCP connection capped at 4 MB/s, 50 ms round trip) in front of each. Every run asks
its URLs with a query of its own (`?run=N`), which both servers ignore when serving a
file and log, so a log line belongs to exactly one run however late the server writes
it. Tools are interleaved, the order rotating each round.

For each scenario and tool: requests, bytes sent / bytes placed (median and worst of
the rounds). Run through bench/run.sh --egress, which installs the tools and builds
jgmirror; results go to bench/out/egress.json and the table to stdout.

What would make it lie: the paced link's proxy reads from the server only as fast as
it forwards, so the server's send buffer, not the proxy's, holds what a closed
connection wasted, as on a WAN; a real WAN's buffers are sized by its bandwidth-delay
product, usually smaller than loopback's, so a cut wastes less there than here.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from bench import OUT, LinkProxy, free_port

MiB = 1 << 20
WWW = OUT / "egress-www"
DL = OUT / "egress-dl"
LOGS = OUT / "egress-logs"
LINK_RATE = 4e6
LINK_RTT = 0.05


@dataclass
class Server:
    """A web server on loopback writing one access log line per request as `STATUS
    BODY_BYTES RANGE URI`."""

    name: str
    port: int
    log: Path
    process: Optional[subprocess.Popen] = None

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.process and self.process.poll() is not None:
                    break
                time.sleep(0.05)
        sys.exit(f"{self.name} did not start; see {LOGS}")

    def lines(self, run: int) -> list[tuple[int, int, str]]:
        """(status, bytes, range) of the requests of run `run`."""
        tag = f"run={run}"
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[3].endswith(tag) and (parts[3].endswith("?" + tag) or parts[3].endswith("&" + tag)):
                found.append((int(parts[0]), int(parts[1]) if parts[1].isdigit() else 0, parts[2]))
        return found

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def start_nginx() -> Server:
    prefix = OUT / "egress-nginx"
    for sub in ("tmp",):
        (prefix / sub).mkdir(parents=True, exist_ok=True)
    server = Server("nginx", free_port(), LOGS / "nginx.log")
    user = "user root root;" if os.geteuid() == 0 else ""
    config = f"""
{user}
worker_processes 2;
daemon off;
pid {prefix}/nginx.pid;
error_log {LOGS}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  default_type application/octet-stream;
  log_format egress '$status $body_bytes_sent "$http_range" $request_uri';
  access_log {server.log} egress;
  client_body_temp_path {prefix}/tmp/body;
  proxy_temp_path {prefix}/tmp/proxy;
  fastcgi_temp_path {prefix}/tmp/fastcgi;
  uwsgi_temp_path {prefix}/tmp/uwsgi;
  scgi_temp_path {prefix}/tmp/scgi;
  keepalive_timeout 120s;
  server {{ listen 127.0.0.1:{server.port}; root {WWW}; sendfile on; tcp_nopush on;
           keepalive_requests 1000000; }}
}}
"""
    (prefix / "nginx.conf").write_text(config)
    server.process = subprocess.Popen(["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                                      stderr=subprocess.DEVNULL)
    server.wait_ready()
    return server


def start_apache() -> Optional[Server]:
    """Apache 2.4 (event MPM, sendfile) as Debian ships it; None when it is not installed."""
    modules = Path("/usr/lib/apache2/modules")
    if not shutil.which("apache2") or not modules.is_dir():
        print("apache2 is not installed: apt-get install -y apache2; the Apache rows are skipped", file=sys.stderr)
        return None
    prefix = OUT / "egress-apache"
    (prefix / "logs").mkdir(parents=True, exist_ok=True)
    server = Server("apache", free_port(), LOGS / "apache.log")
    # As root, Apache serves as www-data: the files must be readable by others.
    user = "User www-data\nGroup www-data\n" if os.geteuid() == 0 else ""
    config = f"""
ServerRoot {prefix}
ServerName 127.0.0.1
Listen 127.0.0.1:{server.port}
PidFile {prefix}/httpd.pid
{user}
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
ErrorLog {LOGS}/apache-error.log
LogFormat "%>s %O \\"%{{Range}}i\\" %U%q" egress
CustomLog {server.log} egress
DocumentRoot {WWW}
<Directory {WWW}>
  Require all granted
</Directory>
EnableSendfile On
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 120
"""
    (prefix / "httpd.conf").write_text(config)
    server.process = subprocess.Popen(["apache2", "-f", str(prefix / "httpd.conf"), "-DFOREGROUND"],
                                      stderr=subprocess.DEVNULL)
    server.wait_ready()
    return server


# ---------------------------------------------------------------- data


def make_file(name: str, size: int) -> Path:
    path = WWW / name
    if not path.exists() or path.stat().st_size != size:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            left = size
            seed = size.to_bytes(8, "little")
            block = (seed * (MiB // 8))
            while left > 0:
                chunk = block[: min(left, len(block))]
                out.write(chunk)
                left -= len(chunk)
                block = block[1:] + block[:1]
    return path


def make_set(count: int, size: int) -> list[str]:
    names = [f"set/{n // 100:02d}/f{n:05d}.bin" for n in range(count)]
    for n, name in enumerate(names):
        path = WWW / name
        if not path.exists() or path.stat().st_size != size:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(n.to_bytes(4, "little") * (size // 4))
    return names


# ---------------------------------------------------------------- running


@dataclass
class Tool:
    name: str
    # The command for URL base `base` and run tag `tag` ("run=N").
    command: Callable[[str, str], list[str]]


@dataclass
class Row:
    scenario: str
    server: str
    link: str
    tool: str
    placed: int
    requests: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)


def clear_downloads() -> None:
    shutil.rmtree(DL, ignore_errors=True)
    DL.mkdir(parents=True)


def run_once(server: Server, tool: Tool, base: str, run: int, timeout: float) -> tuple[int, int]:
    clear_downloads()
    command = tool.command(base, f"run={run}")
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{tool.name} exited {result.returncode}: {result.stderr.strip()[:400]}")
    # A server logs a request the client cut when it sees the close: give it time.
    time.sleep(1.0)
    lines = server.lines(run)
    return len(lines), sum(sent for _, sent, _ in lines)


def tools_for_file(jg: str, name: str, connections: int) -> list[Tool]:
    out = str(DL / Path(name).name)
    return [
        Tool(f"jgmirror get -c {connections}",
             lambda base, tag: [jg, "get", f"{base}/{name}?{tag}", "-o", out, "-c", str(connections), "--quiet"]),
        Tool(f"aria2c -x{connections} -s{connections} -k1M",
             lambda base, tag: ["aria2c", "-q", f"-x{connections}", f"-s{connections}", "-k1M",
                                "--allow-overwrite=true", "--auto-file-renaming=false", "--file-allocation=none",
                                "-d", str(DL), "-o", Path(name).name, f"{base}/{name}?{tag}"]),
        Tool(f"axel -n {connections}",
             lambda base, tag: ["axel", "-q", "-n", str(connections), "-o", out, f"{base}/{name}?{tag}"]),
        Tool("curl", lambda base, tag: ["curl", "-sSf", "-o", out, f"{base}/{name}?{tag}"]),
    ]


def sized_sync_tool(jg: str, name: str, size: int, connections: int) -> Tool:
    def command(base: str, tag: str) -> list[str]:
        manifest = OUT / "egress-manifests" / "sized.yaml"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(f"version: 1\nroot: {DL}\nitems:\n  - url: {base}/{name}?{tag}\n"
                            f"    dest: {Path(name).name}\n    size: {size}\n    connections: {connections}\n")
        return [jg, "sync", str(manifest), "--progress", "none"]
    return Tool(f"jgmirror sync -c {connections}, manifest gives size", command)


def set_tools(jg: str, names: list[str]) -> list[Tool]:
    manifests = OUT / "egress-manifests"
    manifests.mkdir(parents=True, exist_ok=True)

    def manifest(base: str, tag: str) -> list[str]:
        path = manifests / "set.yaml"
        path.write_text(f"version: 1\nroot: {DL}\nitems:\n"
                        + "".join(f"  - {{url: '{base}/{n}?{tag}', dest: '{n}'}}\n" for n in names))
        return [jg, "sync", str(path), "--jobs", "16", "--progress", "none"]

    def aria(base: str, tag: str) -> list[str]:
        path = manifests / "set.aria2"
        path.write_text("".join(f"{base}/{n}?{tag}\n  dir={DL}/{Path(n).parent}\n  out={Path(n).name}\n" for n in names))
        return ["aria2c", "-q", "-j16", "--allow-overwrite=true", "--auto-file-renaming=false", "-i", str(path)]

    def curl(base: str, tag: str) -> list[str]:
        path = manifests / "set.curl"
        path.write_text("".join(f'url = "{base}/{n}?{tag}"\noutput = "{DL}/{n}"\n' for n in names))
        return ["curl", "-sSf", "--parallel", "--parallel-max", "16", "--create-dirs", "-K", str(path)]

    return [Tool("jgmirror sync --jobs 16", manifest), Tool("aria2c -j16 -i", aria),
            Tool("curl --parallel-max 16", curl)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jgmirror", required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated scenario keys")
    parser.add_argument("--no-1g", action="store_true", help="leave out the 1 GiB rows")
    parser.add_argument("--links", default="loopback,paced", help="loopback, paced or both")
    args = parser.parse_args()
    jg = args.jgmirror
    LOGS.mkdir(parents=True, exist_ok=True)
    for log in LOGS.glob("*.log"):
        log.unlink()
    os.chmod(OUT, 0o755)

    f16, f48 = "f16m.bin", "f48m.bin"
    make_file(f16, 16 * MiB)
    make_file(f48, 48 * MiB)
    if not args.no_1g:
        make_file("f1g.bin", 1 << 30)
    names = make_set(2000, 64 << 10)
    for path in [WWW, *WWW.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)

    servers = [s for s in (start_nginx(), start_apache()) if s]
    links = {s.name: LinkProxy(s.port, LINK_RATE, LINK_RTT) for s in servers}
    scenarios: list[tuple[str, str, int, list[Tool], bool]] = [
        # key, label, bytes placed, tools, also over the paced link
        ("get16", "16 MiB, size unknown (get)", 16 * MiB, tools_for_file(jg, f16, 8), True),
        ("get48", "48 MiB, size unknown (get)", 48 * MiB, tools_for_file(jg, f48, 8), True),
        ("sync48sized", "48 MiB, manifest gives size (sync)", 48 * MiB,
         [sized_sync_tool(jg, f48, 48 * MiB, 8)], True),
        ("set2000", "2,000 files × 64 KiB", 2000 * (64 << 10), set_tools(jg, names), True),
    ]
    if not args.no_1g:
        # Over the paced link, one connection would take 4.5 minutes: curl is left out there.
        scenarios.append(("get1g", "1 GiB, size unknown (get)", 1 << 30, tools_for_file(jg, "f1g.bin", 8), True))
    wanted = set(filter(None, args.only.split(",")))
    rows: list[Row] = []
    run = 0
    try:
        for key, label, placed, tools, paced in scenarios:
            if wanted and key not in wanted:
                continue
            for server in servers:
                for link_name in (["loopback", "paced"] if paced else ["loopback"]):
                    if link_name not in args.links.split(","):
                        continue
                    base = server.url() if link_name == "loopback" else links[server.name].url()
                    timeout = 600 if link_name == "paced" or placed >= 1 << 30 else 120
                    here = [tool for tool in tools
                            if not (link_name == "paced" and placed >= 1 << 30 and tool.name == "curl")]
                    table = {tool.name: Row(label, server.name, link_name, tool.name, placed) for tool in here}
                    for round_index in range(args.reps):
                        order = here[round_index % len(here):] + here[: round_index % len(here)]
                        for tool in order:
                            run += 1
                            requests, sent = run_once(server, tool, base, run, timeout)
                            table[tool.name].requests.append(requests)
                            table[tool.name].sent.append(sent)
                            print(f"{key} {server.name} {link_name} {tool.name}: {requests} requests, "
                                  f"{sent / placed:.3f}×", file=sys.stderr, flush=True)
                    rows += table.values()
    finally:
        for link in links.values():
            link.stop()
        for server in servers:
            server.stop()

    (OUT / "egress.json").write_text(json.dumps([row.__dict__ for row in rows], indent=1))
    print("| scenario | server | link | tool | requests (median, max) | sent / placed (median, max) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ratios = [sent / row.placed for sent in row.sent]
        print(f"| {row.scenario} | {row.server} | {row.link} | {row.tool} | "
              f"{statistics.median(row.requests):.0f}, {max(row.requests)} | "
              f"{statistics.median(ratios):.3f}×, {max(ratios):.3f}× |")


if __name__ == "__main__":
    main()
