#!/usr/bin/env python3
"""Acceptance checks against a real nginx on loopback (run through bench/acceptance.sh).

- 48 MiB from nginx `limit_rate 4m` (a budget per request, not per connection):
  8 connections vs 1, and what the report says;
- SIGKILL midway (the killed run capped at 16 MB/s overall so that there is a
  middle to hit), then a second sync resumes with the right SHA-256;
- a remote replaced between two runs ends as the new version, whole;
- HTTPS + HTTP/2 from a throwaway CA: an 8-connection item holds 8 TCP
  connections (counted with `ss`), 2000 small items share a few;
- nginx's `return 302` and `return 308` (with their HTML body) over HTTPS + HTTP/2
  are followed, for a small item and an 8-connection one;
- a certificate the CA did not sign fails with `tls` and exit 1; `insecure: true`
  works and the report marks it;
- an origin that cuts every other response (`jgmirror-origin --drop-every-other`):
  48 MiB completes 10 runs out of 10 and 1 GiB 3 out of 3 (`--drop-runs 10`: ten)
  with the default retries.
Prints one line per check and exits 1 if any fails.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import OUT, WWW, DataFile, Nginx, generate  # noqa: E402

WORK = OUT / "acceptance"
failures: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
    if not ok:
        failures.append(name)


def manifest(name: str, root: str, items: list[dict]) -> Path:
    lines = ["version: 1", f"root: {root}", "items:"]
    for item in items:
        lines.append("  - " + "\n    ".join(f"{k}: {v}" for k, v in item.items()))
    path = WORK / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def sync(jg: str, path: Path, *extra: str) -> tuple[int, dict, float]:
    report = WORK / f"{path.stem}.json"
    start = time.perf_counter()
    code = subprocess.call([jg, "sync", str(path), "--progress", "none", "--quiet", "--report", str(report), *extra])
    return code, json.loads(report.read_text()), time.perf_counter() - start


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def established(port: int) -> set[str]:
    """Local ports of established TCP connections to 127.0.0.1:port."""
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True).stdout
    return {line.split()[-2] for line in out.splitlines() if line.strip()}


def watch_connections(process: subprocess.Popen, port: int) -> tuple[int, int]:
    """(most at once, distinct seen) while process runs."""
    most, seen = 0, set()
    while process.poll() is None:
        now = established(port)
        most, seen = max(most, len(now)), seen | now
        time.sleep(0.02)
    return most, len(seen)


def kill_midway(process: subprocess.Popen, state: Path) -> None:
    """SIGKILL once the first checkpoint has landed and a little more has arrived."""
    deadline = time.time() + 20
    while not state.exists() and process.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()


DROP_AFTER = 256 << 10  # body bytes of every other response before the origin closes


def drop_every_other(jg: str, runs_1g: int) -> None:
    """Every other response to each path is cut after 256 KiB. Each cut response
    brought new bytes, so no retry budget should run out: every run must complete.
    10 runs of 48 MiB; `runs_1g` of 1 GiB (each takes 15–30 s here, so CI runs 3
    and `--drop-runs 10` the full ten)."""
    origin_binary = Path(jg).parent / "jgmirror-origin"
    files = {"/drop/48m.bin": 48 << 20, "/drop/1g.bin": 1 << 30}
    origin = subprocess.Popen([str(origin_binary), "--drop-every-other", str(DROP_AFTER)]
                              + [arg for path, size in files.items() for arg in ("--file", f"{path}:{size}")],
                              stdout=subprocess.PIPE, text=True)
    try:
        hashes, base = {}, None
        for line in origin.stdout:
            words = line.split()
            if words[0] == "FILE":
                hashes[words[1]] = words[2]
            elif words[0] == "READY":
                base = words[1]
                break
        if base is None:
            check("drop origin starts", False, f"{origin_binary} exited {origin.wait()}")
            return
        for path, size in files.items():
            completed, notes = 0, []
            runs = 10 if size < 1 << 30 else runs_1g
            for run in range(runs):
                # Every other run gives the size, so the regions are cut before any answer.
                item = {"url": base + path, "dest": "file.bin", "sha256": hashes[path]} | ({"size": size} if run % 2 else {})
                m = manifest(f"drop{size >> 20}m", str(WORK / f"drop{run}"), [item])
                code, report, seconds = sync(jg, m, "--no-fsync")
                item = report["items"][0]
                if code == 0 and item["status"] == "downloaded":
                    completed += 1
                else:
                    notes.append(f"run {run + 1}: exit {code}, {item['status']}, {(item.get('error') or {}).get('message')}")
                shutil.rmtree(WORK / f"drop{run}", ignore_errors=True)
            check(f"every other response cut after {DROP_AFTER >> 10} KiB: {size >> 20} MiB, default retries "
                  "(every other run with the size in the manifest)",
                  completed == runs, f"{completed} of {runs} runs completed" + ("; " + "; ".join(notes[:3]) if notes else ""))
    finally:
        origin.terminate()
        origin.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jgmirror", required=True)
    parser.add_argument("--only-drop", action="store_true", help="only the dropping-origin checks")
    parser.add_argument("--drop-runs", type=int, default=3, help="runs of the 1 GiB dropping-origin check")
    options = parser.parse_args()
    jg = options.jgmirror
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    if options.only_drop:
        drop_every_other(jg, options.drop_runs)
        print(f"\n{len(failures)} failed" if failures else "\nall passed")
        sys.exit(1 if failures else 0)
    f48 = DataFile("f48m.bin", 48 << 20)
    small = [DataFile(f"small/s{i:04}.bin", 16 << 10) for i in range(2000)]
    generate([f48] + small)
    nginx = Nginx()
    nginx.start()
    try:
        throttled, tls, rogue = nginx.url("throttled"), nginx.url("tls"), nginx.url("rogue")
        ca = str(nginx.prefix / "certs" / "ca.crt")

        # Issue 2: 8 connections vs 1 under nginx limit_rate 4m (per request).
        times = {}
        for connections in (8, 1):
            m = manifest(f"throttled{connections}", str(WORK / f"t{connections}"),
                         [{"url": f"{throttled}/{f48.name}", "dest": "os.iso", "sha256": f48.sha256,
                           "connections": connections}])
            code, report, seconds = sync(jg, m)
            item = report["items"][0]
            times[connections] = seconds
            check(f"48 MiB, connections: {connections}", code == 0 and item["connections"] == connections,
                  f"exit {code}, {seconds:.2f} s, report connections {item['connections']}")
        check("8 connections well under half of one", times[8] < 0.5 * times[1],
              f"{times[8]:.2f} s vs {times[1]:.2f} s = {times[8] / times[1]:.2f}×")

        # Issue 3: SIGKILL halfway, then resume.
        m = manifest("killed", str(WORK / "k"), [{"url": f"{throttled}/{f48.name}", "dest": "os.iso",
                                                  "sha256": f48.sha256, "connections": 4}])
        # Pieces of 1 MiB ride nginx's per-response burst, so 4 connections finish in a
        # fraction of a second; an overall cap of 16 MB/s leaves time to kill it midway.
        process = subprocess.Popen([jg, "sync", str(m), "--progress", "none", "--quiet", "--max-rate", "16M"])
        kill_midway(process, WORK / "k" / "os.iso.jgd")
        left = sorted(p.name for p in (WORK / "k").iterdir())
        check("SIGKILL leaves part + state, no destination", "os.iso" not in left and "os.iso.jgd" in left,
              f"{left}")
        code, report, _ = sync(jg, m)
        item = report["items"][0]
        check("resumed run", code == 0 and item["resumed_from"] > 0 and item["bytes_downloaded"] < f48.size
              and sha256(WORK / "k" / "os.iso") == f48.sha256,
              f"exit {code}, resumed_from {item['resumed_from']}, bytes_downloaded {item['bytes_downloaded']} "
              f"of {f48.size}, SHA-256 {'ok' if sha256(WORK / 'k' / 'os.iso') == f48.sha256 else 'WRONG'}")

        # Issue 3: the remote is replaced between two runs.
        replaced = WWW / "replaced.bin"
        shutil.copy(WWW / f48.name, replaced)
        m = manifest("replaced", str(WORK / "r"), [{"url": f"{throttled}/replaced.bin", "dest": "file.bin",
                                                    "connections": 4}])
        process = subprocess.Popen([jg, "sync", str(m), "--progress", "none", "--quiet", "--max-rate", "16M"])
        kill_midway(process, WORK / "r" / "file.bin.jgd")
        fresh_bytes = os.urandom(f48.size)
        replaced.write_bytes(fresh_bytes)
        code, report, _ = sync(jg, m)
        whole = sha256(WORK / "r" / "file.bin") == hashlib.sha256(fresh_bytes).hexdigest()
        check("replaced remote ends as the new version", code == 0 and whole,
              f"exit {code}, new version whole: {whole}, note: {report['items'][0].get('note')}")
        replaced.unlink()

        # Issue 6: HTTPS + HTTP/2, 8 connections for one item.
        tls_port = nginx.ports["tls"]
        # Capped at 16 MB/s overall so the connections stay open long enough to count.
        m = manifest("tls8", str(WORK / "tls"), [{"url": f"{tls}/{f48.name}", "dest": "big.bin",
                                                  "sha256": f48.sha256, "connections": 8}])
        process = subprocess.Popen([jg, "sync", str(m), "--ca-cert", ca, "--max-rate", "16M", "--progress", "none",
                                    "--quiet"])
        most, _ = watch_connections(process, tls_port)
        check("HTTP/2 item with connections: 8 holds 8 TCP connections (ss -tn)", process.returncode == 0 and most == 8,
              f"exit {process.returncode}, most established at once: {most}")

        m = manifest("tlssmall", str(WORK / "tlssmall"),
                     [{"url": f"{tls}/{s.name}", "dest": Path(s.name).name, "sha256": s.sha256} for s in small])
        process = subprocess.Popen([jg, "sync", str(m), "--ca-cert", ca, "--jobs", "16", "--progress", "none", "--quiet"])
        most, distinct = watch_connections(process, tls_port)
        check("2000 small HTTPS items share connections", process.returncode == 0 and distinct <= 4,
              f"exit {process.returncode}, distinct connections seen: {distinct}, most at once: {most}")

        # Issue 30: nginx's `return 302` / `return 308` carry an HTML body; over HTTP/2
        # (and to the 8 connections' HTTP/1.1) they are followed and the body dropped.
        m = manifest("tlsmoved", str(WORK / "tlsmoved"), [
            {"url": f"{tls}/moved/{small[5].name}", "dest": "small.bin", "sha256": small[5].sha256},
            {"url": f"{tls}/moved308/{f48.name}", "dest": "big.bin", "sha256": f48.sha256, "connections": 8}])
        code, report, _ = sync(jg, m, "--ca-cert", ca)
        check("HTTP/2 redirects with a body (302, 308) are followed", code == 0 and all(
            i["status"] == "downloaded" for i in report["items"]),
              f"exit {code}, {[(i['status'], (i['error'] or {}).get('code')) for i in report['items']]}")

        # Issue 6: a certificate the CA did not sign; insecure: true.
        m = manifest("rogue", str(WORK / "rogue"), [
            {"url": f"{rogue}/{small[0].name}", "dest": "a.bin"},
            {"url": f"{rogue}/{small[1].name}", "dest": "b.bin", "insecure": "true"}])
        code, report, _ = sync(jg, m, "--ca-cert", ca)
        a, b = report["items"]
        check("unsigned certificate fails with tls, exit 1", code == 1 and (a["error"] or {}).get("code") == "tls",
              f"exit {code}, error {a['error']}")
        check("insecure: true works and is marked", b["status"] == "unverified" and b.get("insecure") is True,
              f"status {b['status']}, insecure {b.get('insecure')}")

        # A checksums list over HTTPS from a private CA: sync and verify both need
        # --ca-cert to read it, and verify checks the files against it.
        listed = small[2:4]
        (WWW / "small" / "TLSSUMS").write_text("".join(f"{s.sha256}  {Path(s.name).name}\n" for s in listed))
        m = manifest("tlslist", str(WORK / "tlslist"),
                     [{"url": f"{tls}/{s.name}", "dest": Path(s.name).name} for s in listed])
        m.write_text(m.read_text().replace("items:", f"checksums: [{tls}/small/TLSSUMS]\nitems:", 1))
        code, report, _ = sync(jg, m, "--ca-cert", ca)
        check("checksums list over HTTPS verifies the items", code == 0 and all(
            i["status"] == "downloaded" for i in report["items"]), f"exit {code}, {[i['status'] for i in report['items']]}")
        (WORK / "tlslist" / Path(listed[0].name).name).write_bytes(b"garbage\n")
        untrusted = subprocess.call([jg, "verify", str(m), "--progress", "none", "--quiet"], stderr=subprocess.DEVNULL)
        trusted = subprocess.call([jg, "verify", str(m), "--ca-cert", ca, "--progress", "none", "--quiet"],
                                  stderr=subprocess.DEVNULL)
        check("verify reads the list with --ca-cert and finds the damaged file", untrusted == 1 and trusted == 3,
              f"exit without --ca-cert {untrusted} (1: the list's certificate), with it {trusted} (3: mismatch)")
    finally:
        nginx.stop()
    drop_every_other(jg, options.drop_runs)
    print(f"\n{len(failures)} failed" if failures else "\nall passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
