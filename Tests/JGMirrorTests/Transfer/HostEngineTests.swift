import Foundation
import TestServer
import Testing

@testable import JGMirror

/// The run's host table carried out by the engine (docs/hosts.md), against in-process
/// servers whose log shows what reached them. The grace and probe delays are
/// shortened through the options; nothing here waits on a clock of its own.
@Suite struct HostEngineTests {
    @Test func manyItemsOfADeadHostFailTogetherAfterFewAttempts() async throws {
        let paths = (0..<200).map { "/f\($0)" }
        let server = try silentServer(paths: paths)
        defer { server.stop() }
        var yaml = "version: 1\nitems:\n"
        for path in paths { yaml += "  - url: \(server.url(path))\n    dest: out\(path)\n" }
        try await withTestDirectory { dir in
            let report = try await sync(yaml, in: dir, options: hostTestOptions(grace: 1))
            #expect(report.items.count == 200)
            #expect(report.items.allSatisfy { $0.status == .failed && $0.error?.code == .hostDown })
            // Without the table each item spends its own four attempts: 800 requests.
            // With it, the first items' requests and a handful of probes.
            #expect(server.gets().count <= 40)
            // One message for the whole host: the terminal prints it once.
            let messages = Set(report.items.compactMap { $0.error?.message })
            #expect(messages.count == 1, "\(messages)")
            #expect(report.hosts.first?.state == "down" && (report.hosts.first?.failures ?? 0) >= 2)
            // The report counts the requests jgmirror sent; the server may see a few more,
            // as libcurl sends a request once more on a fresh connection when the reused
            // one turns out closed.
            let requests = report.hosts.first?.requests ?? 0
            #expect(requests >= 1 && requests <= server.gets().count, "\(requests) of \(server.gets().count)")
        }
    }

    @Test func itemsWithALiveMirrorMoveThereWhenThePrimaryIsSuspect() async throws {
        let body = TestServer.bytes(count: 4096, seed: 7)
        let paths = (0..<20).map { "/m\($0)" }
        let primary = try silentServer(paths: paths)
        let mirror = try TestServer()
        defer {
            primary.stop()
            mirror.stop()
        }
        var yaml = "version: 1\nitems:\n"
        for path in paths {
            mirror.set(path, TestServer.Route(body: body))
            yaml += "  - url: \(primary.url(path))\n    mirrors: [\(mirror.url(path))]\n    dest: out\(path)\n"
            yaml += "    sha256: \(sha(body))\n"
        }
        try await withTestDirectory { dir in
            var options = hostTestOptions(grace: 30)
            options.jobs = 2
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.status == .downloaded })
            // Each item would spend its retries on the primary before its mirror: 80
            // requests. Once the primary is suspect, items go to the mirror at once and
            // only probes reach the primary.
            #expect(primary.gets().count < 20)
            #expect(mirror.gets().count >= 20)
        }
    }

    @Test func aRetryAfterDateHoldsTheHostUntilThatTime() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 1024, seed: 3)
        var route = TestServer.Route(body: body)
        // The date is written when the 429 is sent, 1–2 s ahead (it is whole seconds),
        // however long a loaded machine took to get there.
        route.fault = { request in
            let until = HTTPDate.format(seconds: Int64(Date().timeIntervalSince1970) + 2)
            return request == 0 ? .statusWithHeaders(429, ["Retry-After: \(until)"]) : nil
        }
        server.set("/busy", route)
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/busy"), sha256: sha(body)), in: dir)
            #expect(report.items.first?.status == .downloaded)
            let gets = server.gets("/busy")
            #expect(gets.count == 2)
            // The date is 1–2 s ahead (it is whole seconds): nothing is asked before it.
            // Read from a per-connection backoff, the retry came after 10 ms.
            if gets.count == 2 { #expect(gets[1].at - gets[0].at >= 0.9) }
            // The report's hosts section: labelled by origin, the 429 counted, up again.
            let host = report.hosts.first
            #expect(report.hosts.count == 1 && host?.origin == "http://127.0.0.1:\(server.port)")
            #expect(
                host?.requests == 2 && host?.throttled == 1 && host?.state == "up" && host?.bytes == 1024,
                "\(String(describing: host))")
            // How long depends on when the engine read the 429; that it cooled, not.
            #expect((host?.coolingS ?? 0) > 0)
            // The same per origin in `--metrics`.
            let metrics = RunMetrics.render(report)
            let origin = "origin=\"http://127.0.0.1:\(server.port)\""
            func sample(_ name: String, _ extra: String = "") -> Double? {
                metrics.split(separator: "\n").first {
                    $0.hasPrefix(name + "{") && $0.contains(origin) && (extra.isEmpty || $0.contains(extra))
                }
                .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            }
            #expect(sample("jgmirror_host_throttled") == 1 && sample("jgmirror_host_requests") == 2)
            #expect(sample("jgmirror_host_state", "state=\"up\"") == 1 && sample("jgmirror_host_state", "state=\"down\"") == 0)
            #expect(!metrics.contains("/busy"))
        }
    }

    @Test func aConnectionUnderMinRateForTheTimeoutIsCutAndAskedAgain() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 40_000, seed: 5)
        var route = TestServer.Route(body: body)
        // The first answer trickles at 2 kB/s: bytes keep coming, but under 64 KiB/s.
        route.fault = { $0 == 0 ? .slow(bytesPerSecond: 2000) : nil }
        server.set("/trickle", route)
        let yaml =
            "version: 1\ndefaults:\n  min_rate: 64KiB\n  timeout: 1s\nitems:\n  - url: \(server.url("/trickle"))\n"
            + "    dest: out.bin\n    sha256: \(sha(body))\n"
        try await withTestDirectory { dir in
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .downloaded)
            // Left alone, the trickle would have been the whole download (20 s).
            #expect(server.gets("/trickle").count >= 2)
        }
    }

    @Test func anOriginUnderMinRateIsLeftForTheMirrorAfterOneCut() async throws {
        let body = TestServer.bytes(count: 40_000, seed: 6)
        let primary = try TestServer()
        let mirror = try TestServer()
        defer {
            primary.stop()
            mirror.stop()
        }
        // Every answer of the primary trickles at 2 kB/s: bytes keep coming, under 64 KiB/s.
        var slow = TestServer.Route(body: body)
        slow.fault = { _ in .slow(bytesPerSecond: 2000) }
        primary.set("/drip", slow)
        mirror.set("/drip", TestServer.Route(body: body))
        let yaml =
            "version: 1\ndefaults:\n  min_rate: 64KiB\n  timeout: 1s\n  retries: 3\nitems:\n"
            + "  - url: \(primary.url("/drip"))\n    mirrors: [\(mirror.url("/drip"))]\n"
            + "    dest: out.bin\n    sha256: \(sha(body))\n    connections: 1\n"
        try await withTestDirectory { dir in
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .downloaded)
            // Each cut brought bytes, which restored the retries: the primary was asked
            // again and again (about 20 times, the whole body at 2 kB/s), never the mirror.
            #expect(primary.gets("/drip").count <= 2)
            #expect(mirror.gets("/drip").count >= 1)
        }
    }

    @Test func aPrimaryThatRefusesIsLeftForTheMirrorAtItsFirstRefusal() async throws {
        let body = TestServer.bytes(count: 8192, seed: 8)
        let mirror = try TestServer()
        defer { mirror.stop() }
        mirror.set("/f", TestServer.Route(body: body))
        // A port nothing listens on any more: connections to it are refused.
        let gone = try TestServer()
        let refused = gone.url("/f")
        gone.stop()
        let yaml =
            "version: 1\ndefaults:\n  retries: 3\nitems:\n  - url: \(refused)\n    mirrors: [\(mirror.url("/f"))]\n"
            + "    dest: out.bin\n    sha256: \(sha(body))\n    connections: 1\n"
        try await withTestDirectory { dir in
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .downloaded)
            // The refused primary was asked once; before, it was asked again after a
            // backoff, and once more as the probe of a suspect host, before the mirror.
            let primary = report.hosts.first { $0.origin == "http://127.0.0.1:\(gone.port)" }
            #expect(primary?.requests == 1, "\(report.hosts)")
            #expect(mirror.gets("/f").count == 1)
        }
    }

    @Test func hostOptionsAreReadFromDefaultsWithTheirBounds() throws {
        let manifest = try Manifest.parse(
            "version: 1\ndefaults:\n  connect_timeout: 2s\n  min_rate: 4KiB/s\n  host_grace: 1m\n  max_wait: 0s\n"
                + "items:\n  - url: http://h/a\n",
            name: "m.yaml")
        #expect(manifest.hosts.connectTimeout == 2 && manifest.hosts.minRate == 4096)
        #expect(manifest.hosts.hostGrace == 60 && manifest.hosts.maxWait == 0)
        var configuration = TransferEngine.Configuration()
        configuration.apply(manifest.hosts)
        #expect(configuration.connectTimeout == 2 && configuration.minRate == 4096)
        #expect(configuration.hosts.grace == 60 && configuration.hosts.maxWait == 0)
        let bad: [(String, String)] = [
            ("  connect_timeout: 0s\n", "m.yaml:3:20: 'connect_timeout' must be from 100ms to 1h"),
            (
                "  min_rate: fast\n",
                "m.yaml:3:13: 'min_rate' must be a rate such as 512, 1KiB or 64KiB/s, at least 1 byte/s, not 'fast'"
            ),
            ("  host_grace: 2w\n", "m.yaml:3:15: 'host_grace' must be a duration such as 500ms, 30s or 2m, not '2w'"),
            // Days are a unit (keep_removed: 1d), and the bound holds in them too.
            ("  host_grace: 2d\n", "m.yaml:3:15: 'host_grace' must be from 0s to 24h"),
            ("  max_wait: 25h\n", "m.yaml:3:13: 'max_wait' must be from 0s to 24h"),
            ("  host_grase: 1s\n", "m.yaml:3:3: unknown key 'host_grase' in defaults (did you mean 'host_grace'?)"),
        ]
        expectManifestErrors(bad, under: "defaults")
    }

    @Test func atMaxDurationTheRunStopsItsItemsWithCodeDeadlineAndExitsOne() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 64 << 10, seed: 9)
        var route = TestServer.Route(body: body)
        // Some bytes, then silence for longer than the test may take.
        route.fault = { _ in .stall(afterBytes: 1000, seconds: 60) }
        server.set("/stuck", route)
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let path = write(manifest(url: server.url("/stuck"), sha256: sha(body)), to: "m.yaml", in: dir)
            let report = out + "/report.json"
            let run = try await execute(["sync", path, "--max-duration", "1s", "--report", report, "--progress", "none"])
            #expect(run.status == 1, "\(run.stderr)")
            let items = try loadReport(report)["items"] as? [[String: Any]]
            #expect(items?.first?["status"] as? String == "interrupted")
            #expect((items?.first?["error"] as? [String: Any])?["code"] as? String == "deadline")
            let hosts = try loadReport(report)["hosts"] as? [[String: Any]]
            #expect(hosts?.first?["origin"] as? String == "http://127.0.0.1:\(server.port)")
            // The stalled request, and a replacement when the stall showed before the
            // deadline (a loaded machine reaches the deadline later): the host stays up.
            #expect(hosts?.first?["state"] as? String == "up" && (hosts?.first?["requests"] as? Int ?? 0) >= 1)
            let refused = try await execute(["sync", path, "--max-duration", "soon", "--progress", "none"])
            #expect(refused.status == 2 && refused.stderr.contains("--max-duration must be a duration"), "\(refused.stderr)")
        }
    }

    @Test func aRunDeadlineIsFixedOncePerRun() {
        let deadline = RunDeadline()
        #expect(deadline.fix(after: 1, now: 0) == 1_000_000_000)
        // Later calls of the same run (its items after its lists) keep the first one's.
        #expect(deadline.fix(after: 1, now: 5_000_000_000) == 1_000_000_000)
        deadline.endRun()
        // The next run of the same options counts from its own start.
        #expect(deadline.fix(after: 1, now: 10_000_000_000) == 11_000_000_000)
    }

    @Test func optionsUsedForASecondRunGiveItADeadlineOfItsOwn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 1000, seed: 5)
        var stuck = TestServer.Route(body: body)
        stuck.fault = { _ in .stall(afterBytes: 10, seconds: 60) }
        server.set("/stuck", stuck)
        server.set("/fine", TestServer.Route(body: body))
        var options = testOptions()
        // Long enough that a loaded machine finishes a 1,000-byte file in it; the rule
        // itself is `aRunDeadlineIsFixedOncePerRun`'s, in virtual time.
        options.maxDuration = 3
        try await withTestDirectory { dir in
            let first = try await sync(manifest(url: server.url("/stuck"), sha256: sha(body)), in: dir, options: options)
            #expect(first.items.first?.error?.code == .deadline)
            // The same options, a run later: its second starts now, not at the first run's.
            let second = try await sync(manifest(url: server.url("/fine"), sha256: sha(body)), in: dir, options: options)
            #expect(second.items.first?.status == .downloaded, "\(second.items)")
        }
    }

    @Test func theDeadlineCountsFromTheListsAndStopsAListThatNeverComes() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 1000, seed: 4)
        // The list's host answers the head and some bytes, then nothing for longer
        // than the test may take; the file its list would name is served.
        var list = TestServer.Route(body: Array("\(sha(body))  f.bin\n".utf8))
        list.fault = { _ in .stall(afterBytes: 10, seconds: 60) }
        server.set("/rel/SHA256SUMS", list)
        server.set("/rel/f.bin", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                root: \(dir)/mirror
                items:
                  - url: \(server.url("/rel/f.bin"))
                    dest: plain.bin
                    sha256: \(sha(body))
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    dest: rel/
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let report = dir + "/report.json"
            let run = try await execute(["sync", path, "--max-duration", "1s", "--report", report, "--progress", "none"])
            #expect(run.status == 1, "\(run.stderr)")
            let items = try #require(try loadReport(report)["items"] as? [[String: Any]])
            let listRow = try #require(items.first { ($0["url"] as? String)?.hasSuffix("SHA256SUMS") == true }, "\(items)")
            #expect(listRow["status"] as? String == "failed")
            #expect((listRow["error"] as? [String: Any])?["code"] as? String == "deadline", "\(listRow)")
            // The list took the run's whole second: the plain item is stopped at once,
            // not given a second of its own.
            let plain = try #require(items.first { $0["dest"] as? String == "plain.bin" }, "\(items)")
            #expect(plain["status"] as? String == "interrupted")
            #expect((plain["error"] as? [String: Any])?["code"] as? String == "deadline", "\(plain)")
            #expect(server.gets("/rel/f.bin").isEmpty)
        }
    }
}

/// A host's `Retry-After`, through the built binary: once the answer is read, no
/// request reaches the host before the time it named (docs/hosts.md#rate-limits).
@Suite struct RetryAfterEndToEndTests {
    @Test func noRequestReachesAHostAfterItsRetryAfterWasRead() async throws {
        // A server whose workers are busy: after its first connection it accepts none
        // for 2 s, and the kernel holds one more; the other clients' connects wait and
        // are tried again by the kernel at 1 s and 3 s.
        let server = try TestServer(backlog: 0)
        defer { server.stop() }
        let body = TestServer.bytes(count: 4096, seed: 3)
        var route = TestServer.Route(body: body)
        route.fault = { $0 == 0 ? .status(429, retryAfter: 6) : nil }
        server.set("/r", route)
        server.pauseAccepting(after: 1, for: 2)
        try await withTestDirectory { dir in
            var yaml = "version: 1\ndefaults: {connections: 1}\nitems:\n"
            for index in 0..<8 { yaml += "  - {url: \(server.url("/r")), dest: f\(index), sha256: \(sha(body))}\n" }
            let path = write(yaml, to: "m.yaml", in: dir)
            let run = try #require(
                try await execute(["sync", path, "--progress", "none"], endingWithin: 60), "the run did not end within 60 s")
            #expect(run.status == 0, "\(run.stderr)")
            let requests = server.requests()
            let answered = try #require(requests.first).at
            // The connection the kernel held had its request sent before the 429 was read;
            // nothing else may arrive until the 6 s are over.
            let early = requests.dropFirst().filter { $0.at - answered > 2.5 && $0.at - answered < 5.5 }
            #expect(early.isEmpty, "\(requests.map { $0.at - answered })")
        }
    }

    @Test func aRetryAfterTooLargeToReadIsRateLimitedNotNoWait() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var route = TestServer.Route(body: [1, 2, 3])
        route.fault = { _ in .statusWithHeaders(429, ["Retry-After: 99999999999999999999999"]) }
        server.set("/r", route)
        try await withTestDirectory { dir in
            let path = write(manifest(url: server.url("/r"), extra: "retries: 3"), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none", "--report", outputs(beside: dir) + "/r.json"])
            #expect(run.status == 1, "\(run.stderr)")
            let item = try #require((try loadReport(outputs(beside: dir) + "/r.json")["items"] as? [[String: Any]])?.first)
            #expect((item["error"] as? [String: Any])?["code"] as? String == "rate_limited", "\(item)")
            // Not asked again at once, as a wait of no time would be.
            #expect(server.gets("/r").count == 1)
        }
    }
}
