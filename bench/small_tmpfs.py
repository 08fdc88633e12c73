#!/usr/bin/env python3
"""Like-for-like timing of the 2000 small files into tmpfs, tools interleaved.

ext4's slow spells after mass deletions and the durable placement's syncs stay
out: each round runs every jgmirror binary given (`sync --jobs 16 --no-fsync`)
and `curl --parallel --parallel-max 16` once, in turn, into /dev/shm, and the
medians of wall time and of user and system CPU are printed, with each tool's
wall time over curl's.

Start the bench's nginx first, in another terminal:
    python3 bench/bench.py --jgmirror .build/release/jgmirror --serve
then:
    python3 bench/small_tmpfs.py --rounds 40 BIN [BIN ...] [--events]

--events leaves the progress events on (`--quiet` only, as a cron job would run
it) instead of `--progress none --quiet`.
"""
import argparse
import re
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE / "out" / "manifests"
SHM = Path("/dev/shm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+", help="jgmirror binaries to compare")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--events", action="store_true", help="leave progress events on (--quiet only)")
    options = parser.parse_args()

    jg_root, curl_root = SHM / "jgmirror-small", SHM / "curl-small"
    manifest = SHM / "jgmirror-small.yaml"
    manifest.write_text(re.sub(r"(?m)^root: .*$", f"root: {jg_root}", (MANIFESTS / "small.yaml").read_text()))
    config = SHM / "curl-small.curl"
    config.write_text(re.sub(r'output = "[^"]*/', f'output = "{curl_root}/', (MANIFESTS / "small.curl").read_text()))

    quiet = ["--quiet"] if options.events else ["--progress", "none", "--quiet"]
    tools = [(f"{binary} ({index + 1})", [binary, "sync", str(manifest), "--jobs", "16", "--no-fsync"] + quiet, jg_root)
             for index, binary in enumerate(options.binaries)]
    tools.append(("curl", ["curl", "-sSf", "--parallel", "--parallel-max", "16", "--create-dirs", "-K", str(config)],
                  curl_root))
    runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _, _ in tools}
    try:
        for _ in range(options.rounds):
            for name, command, output in tools:
                shutil.rmtree(output, ignore_errors=True)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
                wall = time.perf_counter() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                runs[name].append((wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime))
    finally:
        for path in (jg_root, curl_root):
            shutil.rmtree(path, ignore_errors=True)
        manifest.unlink(missing_ok=True)
        config.unlink(missing_ok=True)
    curl = statistics.median(wall for wall, _, _ in runs["curl"])
    print(f"{options.rounds} rounds, medians")
    for name, values in runs.items():
        wall, user, system = (statistics.median(column) for column in zip(*values))
        print(f"{name:50} wall {wall * 1000:6.1f} ms  user {user * 1000:6.1f} ms  system {system * 1000:6.1f} ms"
              f"  {wall / curl:.2f} x curl")


if __name__ == "__main__":
    main()
