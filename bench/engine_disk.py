#!/usr/bin/env python3
"""What the engine thread spends on system calls that touch the disk (ARCHITECTURE.md).

The engine thread writes every body buffer (pwrite64), creates and reserves the part
file of an item that opens it lazily (openat, flock, ftruncate, fallocate: a fresh
item without `size`), and asks the file system for its free space every 8 MiB of a
body of unknown length (fstatvfs, which is the fstatfs system call).

Each run syncs one 1 GiB item from nginx on loopback (bench.py's; no `size` in the
manifest) and the same bytes without a length (a close-delimited response from a
small Python server), twice each:

- under `perf record` (cpu-clock samples at 1999 Hz, with call graphs), for the engine
  thread's CPU time and the share of it inside each system call: sampling costs the
  run little, so these are the figures to quote;
- under `perf trace -s`, for the exact number of each call and the time of the rare
  ones (fallocate, fstatfs): tracing adds about 12 µs to every call (the shortest
  calls show that much) and more than doubles the run, so its per-call times are
  upper bounds.

The engine thread is the one that calls pwrite64 most (SQLite's writes are another
thread's). Prints each run, then the medians; and last what the engine thread's one
wait on the item's queue (a start over, `ItemDurability.dropState`) may cost at most
here: an fdatasync of the 64 MiB a durable run writes between two flushes.

    bench/engine_disk.py --jgmirror .build/release/jgmirror [--runs 5]

Needs nginx and perf, and the right to sample the kernel (root, or
perf_event_paranoid <= 1).
"""

import argparse
import http.server
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import OUT, DataFile, Nginx, generate  # noqa: E402

# glibc's fstatvfs is the fstatfs system call.
CALLS = ["pwrite64", "recvfrom", "fstatfs", "openat", "flock", "ftruncate", "fallocate"]
SIZE = 1 << 30
HERTZ = 1999


class Unsized(http.server.BaseHTTPRequestHandler):
    """Serves `path_on_disk`'s bytes with no Content-Length: the body ends with the connection."""

    path_on_disk = ""
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        with open(self.path_on_disk, "rb") as body:
            while chunk := body.read(1 << 20):
                self.wfile.write(chunk)

    def log_message(self, *_: object) -> None:
        pass


def sync(jg: str, url: str, work: Path, wrapper: list[str]) -> float:
    """Syncs `url` into a fresh tree under `wrapper`; the wall seconds."""
    shutil.rmtree(work / "tree", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    manifest = work / "m.yaml"
    manifest.write_text(f"version: 1\nroot: {work}/tree\nitems:\n  - url: {url}\n    dest: big.bin\n")
    start = time.perf_counter()
    subprocess.run([*wrapper, jg, "sync", str(manifest), "--progress", "none", "--quiet"], check=True)
    wall = time.perf_counter() - start
    if (work / "tree/big.bin").stat().st_size != SIZE:
        sys.exit("the synced file has the wrong size")
    return wall


def traced(jg: str, url: str, work: Path) -> dict[str, tuple[int, float]]:
    """Calls and traced milliseconds per system call of the engine thread."""
    sync(jg, url, work, ["perf", "trace", "-s", "-o", str(work / "trace.txt"), "--"])
    threads: list[dict[str, tuple[int, float]]] = []
    for line in (work / "trace.txt").read_text().splitlines():
        if re.match(r"^\s*\S.*\(\d+\), \d+ events", line):
            threads.append({})
            continue
        fields = line.split()
        if threads and len(fields) >= 4 and fields[0] in CALLS and fields[1].isdigit():
            threads[-1][fields[0]] = (int(fields[1]), float(fields[3]))
    return max(threads, key=lambda calls: calls.get("pwrite64", (0, 0.0))[0], default={})


def sampled(jg: str, url: str, work: Path) -> tuple[float, dict[str, float], float]:
    """The engine thread's CPU seconds, the share of them inside each system call, and wall seconds."""
    data = work / "perf.data"
    wall = sync(jg, url, work, ["perf", "record", "-q", "-g", "-e", "cpu-clock", "-F", str(HERTZ), "-o", str(data), "--"])
    report = ["perf", "report", "-i", str(data), "--stdio", "-g", "none"]
    by_thread = subprocess.run(report + ["-n", "--sort", "pid"], capture_output=True, text=True).stdout
    samples = {int(m[1]): int(m[0]) for m in re.findall(r"^\s*[\d.]+%\s+[\d.]+%\s+(\d+)\s+(\d+):", by_thread, re.M)}
    best: tuple[float, dict[str, float]] = (0.0, {})
    for tid, count in sorted(samples.items(), key=lambda item: -item[1])[:4]:
        inside = subprocess.run(report + [f"--tid={tid}", "--percentage", "relative", "--children", "--sort", "sym"],
                                capture_output=True, text=True).stdout
        shares = {name: 0.0 for name in CALLS}
        for share, name in re.findall(r"^\s*([\d.]+)%\s+[\d.]+%\s+\[k\] __x64_sys_(\w+)$", inside, re.M):
            if name in shares:
                shares[name] = float(share)
        if count * shares["pwrite64"] > best[0] * HERTZ * best[1].get("pwrite64", 0.0):
            best = (count / HERTZ, shares)
    return best[0], best[1], wall


def flush_wait(folder: Path) -> float:
    """Milliseconds an fdatasync of 64 MiB just written takes (`flushStep`)."""
    path = folder / "flush.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.posix_fallocate(fd, 0, 64 << 20)
        block = os.urandom(1 << 20)
        for offset in range(0, 64 << 20, len(block)):
            os.pwrite(fd, block, offset)
        start = time.perf_counter()
        os.fdatasync(fd)
        return (time.perf_counter() - start) * 1000
    finally:
        os.close(fd)
        path.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jgmirror", required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    big = DataFile("engine-disk/1g.bin", SIZE)
    generate([big])
    nginx = Nginx()
    nginx.start()
    Unsized.path_on_disk = str(OUT / "www" / big.name)
    unsized = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unsized)
    threading.Thread(target=unsized.serve_forever, daemon=True).start()
    cases = {"sized": f"{nginx.url('plain')}/{big.name}",
             "unsized": f"http://127.0.0.1:{unsized.server_address[1]}/1g.bin"}
    results: dict[str, list] = {case: [] for case in cases}
    work = Path(tempfile.mkdtemp(prefix="engine-disk-", dir=OUT))
    try:
        for number in range(args.runs):
            for case, url in cases.items():
                # perf report now and then finds no thread in pwrite64 (samples lost):
                # such a run is sampled again.
                for _ in range(3):
                    cpu, shares, wall = sampled(args.jgmirror, url, work / case)
                    if cpu > 0:
                        break
                calls = traced(args.jgmirror, url, work / case)
                results[case].append((cpu, shares, wall, calls))
                shown = ", ".join(f"{name} {shares[name]:.1f} %" for name in CALLS if shares.get(name))
                counted = ", ".join(f"{name} {count}× {ms:.1f} ms" for name, (count, ms) in calls.items())
                print(f"run {number + 1} {case}: wall {wall:.2f} s; engine thread {cpu:.2f} s of CPU: {shown}; "
                      f"traced: {counted}", flush=True)
        flushes = [flush_wait(work) for _ in range(args.runs)]
    finally:
        nginx.stop()
        unsized.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmedians over {args.runs} runs:")
    for case, runs in results.items():
        cpu = statistics.median(run[0] for run in runs)
        print(f"  {case}: wall {statistics.median(run[2] for run in runs):.2f} s, engine thread {cpu:.2f} s of CPU")
        for name in CALLS:
            share = statistics.median(run[1].get(name, 0.0) for run in runs)
            counts = [run[3][name][0] for run in runs if name in run[3]]
            millis = [run[3][name][1] for run in runs if name in run[3]]
            if not counts:
                continue
            count = statistics.median(counts)
            line = f"    {name}: {count:.0f} calls; {share:.1f} % of the thread's CPU ({share * cpu * 10:.0f} ms"
            if name == "pwrite64":
                line += f", {share * cpu * 10 / (SIZE >> 20):.2f} ms per MiB"
            line += f"); traced {1000 * statistics.median(millis) / count:.1f} µs a call"
            print(line)
    print(f"  fdatasync of 64 MiB just written: {statistics.median(flushes):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
