#!/usr/bin/env python3
"""A loopback TCP proxy that makes each connection behave like one flow on a WAN link.

Every accepted connection gets its own token bucket on the response direction
(``--rate`` bytes per second, a bucket of one read chunk, so no burst beyond a few
KiB after an idle spell) and a one-way delay of ``RTT/2`` in each direction: a
request reaches the upstream RTT/2 after the client sent it, and each response
chunk reaches the client RTT/2 after the bucket let it through. The TCP handshake
costs one more round trip: a connection's first request cannot reach the upstream
before ``accept + RTT + RTT/2``. So one request on a fresh connection sees its first
byte after 2 RTT, a new request on a kept-alive connection idles it for one RTT,
and a download of S bytes over one connection takes S / rate + 2 RTT at best.

``--slow-every N`` paces every N-th connection (the N-th, 2N-th, … accepted since
the last reset) at ``rate / --slow-factor``.

``--client-rate R`` caps all of the proxy's connections together at R bytes per
second as well (one more token bucket, shared): a server that caps each client, not
each connection, as a mirror that throttles by address does. Every connection to
the proxy is the same client, since they all come from loopback.

Why a proxy and not ``tc``: the per-connection cap needs one queue per flow, and the
delay needs ``netem``, which is not built into every kernel (it is missing on the
machine RESULTS.md was measured on; ``tbf`` is there but caps the whole device).

What it does not model: loss, reordering, slow start and congestion control (the
rate is there from the first byte), request bytes are delayed but not paced, and
upstream data already in the proxy's socket buffer is not lost when the client
aborts. It runs in one Python thread; at 32 MB/s over 8 connections it uses about a
third of a core.

Standalone: ``python3 bench/linkproxy.py --upstream 127.0.0.1:8080 --rate 4000000
--rtt 0.2`` prints ``READY PORT``; SIGHUP prints ``STATS connections=C requests=R``
for the connections accepted since the previous SIGHUP and restarts the count (the
bench resets it before every run, so "every fifth connection" is per run).
"""

import argparse
import asyncio
import os
import signal
import sys


IDLE = 0.002  # a read that waited longer than this found the upstream idle
LATE = 0.1  # most a busy connection catches up after the proxy was scheduled late


class Link:
    """Counters and settings shared by all connections of one proxy."""

    def __init__(self, upstream: tuple[str, int], rate: float, rtt: float, slow_every: int, slow_factor: float,
                 client_rate: float = 0.0):
        self.upstream = upstream
        self.client_rate = client_rate
        # When the shared bucket will have let every byte so far through (--client-rate).
        self.client_free_at = 0.0
        self.rate = rate
        self.rtt = rtt
        self.slow_every = slow_every
        self.slow_factor = slow_factor
        self.connections = 0
        self.requests = 0

    def rate_for(self, number: int) -> float:
        if self.slow_every and number % self.slow_every == 0:
            return self.rate / self.slow_factor
        return self.rate

    def reset(self) -> str:
        line = f"STATS connections={self.connections} requests={self.requests}"
        self.connections = 0
        self.requests = 0
        return line


class DelayLine:
    """Delivers what it is given to `writer`, each piece `delay` seconds after `put`."""

    def __init__(self, writer: asyncio.StreamWriter, delay: float):
        self.writer = writer
        self.delay = delay
        self.queue: asyncio.Queue = asyncio.Queue()
        self.broken = False  # the writer's peer went away
        self.task = asyncio.ensure_future(self.run())

    def put(self, data: bytes, not_before: float = 0.0) -> None:
        loop = asyncio.get_running_loop()
        self.queue.put_nowait((max(loop.time(), not_before) + self.delay, data))

    def close(self) -> None:
        self.put(b"")

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                due, data = await self.queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if self.writer.can_write_eof():
                        self.writer.write_eof()
                    return
                self.writer.write(data)
                await self.writer.drain()
        except (ConnectionError, OSError):
            self.broken = True


async def pump_up(link: Link, reader: asyncio.StreamReader, line: DelayLine, accepted: float) -> None:
    """Client to upstream: delayed by RTT/2, and the first bytes by the handshake's RTT too."""
    try:
        while data := await reader.read(65536):
            if data[:4] in (b"GET ", b"HEAD"):
                link.requests += 1
            line.put(data, not_before=accepted + link.rtt)
    except (ConnectionError, OSError):
        pass
    line.close()


async def pump_down(link: Link, rate: float, reader: asyncio.StreamReader, line: DelayLine) -> None:
    """Upstream to client: through this connection's token bucket (and the client's,
    with --client-rate), then delayed by RTT/2."""
    loop = asyncio.get_running_loop()
    chunk = int(min(64 * 1024, max(4 * 1024, rate / 64)))
    burst = chunk / rate  # seconds of credit an idle bucket can hold
    free_at = loop.time()  # when the bucket will have let every byte so far through
    try:
        while not line.broken:
            asked = loop.time()
            data = await reader.read(chunk)
            if not data:
                break
            now = loop.time()
            if now - asked > IDLE:
                # The upstream had nothing to send (a new request's round trip): the
                # bucket refilled, up to one chunk.
                free_at = max(free_at, now - burst)
            else:
                # Busy: the bucket is behind only because this process woke late (a
                # loaded machine); catch up, but never by more than LATE.
                free_at = max(free_at, now - LATE)
            free_at += len(data) / rate
            due = free_at
            if link.client_rate:
                # The shared bucket holds at most one chunk of credit, like the connection's.
                link.client_free_at = max(link.client_free_at, now - chunk / link.client_rate)
                link.client_free_at += len(data) / link.client_rate
                due = max(due, link.client_free_at)
            if due > now:
                await asyncio.sleep(due - now)
            line.put(data)
    except (ConnectionError, OSError):
        pass
    line.close()


async def handle(link: Link, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    accepted = loop.time()
    link.connections += 1
    rate = link.rate_for(link.connections)
    try:
        up_reader, up_writer = await asyncio.open_connection(*link.upstream)
    except OSError:
        client_writer.close()
        return
    half = link.rtt / 2
    to_upstream, to_client = DelayLine(up_writer, half), DelayLine(client_writer, half)
    try:
        await asyncio.gather(pump_up(link, client_reader, to_upstream, accepted),
                             pump_down(link, rate, up_reader, to_client))
        await asyncio.gather(to_upstream.task, to_client.task)
    except asyncio.CancelledError:
        pass  # the proxy is stopping
    finally:
        for writer in (up_writer, client_writer):
            writer.close()


async def serve(link: Link, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: handle(link, r, w), "127.0.0.1", port)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, lambda: print(link.reset(), flush=True))
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    parser.add_argument("--rate", type=float, required=True, help="bytes per second per connection")
    parser.add_argument("--rtt", type=float, default=0.0, help="round-trip time in seconds")
    parser.add_argument("--slow-every", type=int, default=0, help="every N-th connection is slow (0: none)")
    parser.add_argument("--slow-factor", type=float, default=10.0, help="a slow connection's rate divisor")
    parser.add_argument("--client-rate", type=float, default=0.0,
                        help="bytes per second for all connections together (0: no cap)")
    options = parser.parse_args()
    host, _, port = options.upstream.rpartition(":")
    try:
        os.nice(-10)  # the link's timing should not depend on what else the machine runs
    except OSError:
        pass
    link = Link((host, int(port)), options.rate, options.rtt, options.slow_every, options.slow_factor,
                options.client_rate)
    try:
        asyncio.run(serve(link, options.port))
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
