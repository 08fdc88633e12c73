import Foundation
import JGMirror
import TestServer
import Testing

/// The library as an embedding program sees it: public API only.
@Suite struct APITests {
    let server: TestServer

    init() throws { server = try TestServer() }

    @Test func eventsArriveInOrderWithMonotonicProgress() async throws {
        let big = TestServer.bytes(count: 4 << 20, seed: 3)
        let small = TestServer.bytes(count: 5000, seed: 4)
        var route = TestServer.Route(body: big, etag: "\"e1\"")
        route.bytesPerSecond = 1 << 20
        server.set("/big", route)
        // Its head comes after several progress intervals: no progress before the start.
        var late = TestServer.Route(body: small)
        late.headDelay = 0.3
        server.set("/small", late)
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/big")), dest: big.bin, sha256: \(sha(big)), connections: 4, min_segment: 256KiB, tag: 7}
                  - {url: \(server.url("/small")), dest: small.bin, sha256: \(sha(small)), tag: 8}
                """
            var options = testOptions()
            options.progressInterval = 0.05
            let session = SyncSession(plan: try plan(yaml, root: dir), options: options)
            let (report, events) = try await runCollecting(session)
            #expect(report.exitCode == .success)

            for dest in ["big.bin", "small.bin"] {
                let mine = events.filter { $0.dest == dest }
                guard case .itemStarted(let start) = mine.first else {
                    Issue.record("\(dest): first event is not itemStarted")
                    continue
                }
                guard case .itemFinished(let result) = mine.last else {
                    Issue.record("\(dest): last event is not itemFinished")
                    continue
                }
                #expect(mine.dropFirst().dropLast().allSatisfy { if case .progress = $0 { true } else { false } })
                #expect(result.status == .downloaded)
                #expect(start.length == result.bytes)
                let progress = mine.compactMap { event -> ItemProgress? in
                    if case .progress(let p) = event { p } else { nil }
                }
                #expect(
                    zip(progress, progress.dropFirst()).allSatisfy {
                        $0.bytesPresent <= $1.bytesPresent && $0.bytesThisRun <= $1.bytesThisRun
                    })
                #expect(progress.allSatisfy { $0.bytesPresent <= ($0.expected ?? .max) && $0.tag == start.tag })
            }
            let bigStart = events.compactMap { event -> ItemStart? in
                if case .itemStarted(let s) = event, s.dest == "big.bin" { s } else { nil }
            }.first
            #expect(bigStart?.connections == 4)
            #expect(bigStart?.tag == 7)
            // One second at 1 MiB/s per connection over 4 connections: about 20 intervals,
            // so even a loaded machine that stalls the engine thread a while sees several.
            #expect(events.filter { if case .progress(let p) = $0 { p.dest == "big.bin" } else { false } }.count >= 2)
        }
    }

    @Test func resultsEqualWhatTheReportSays() async throws {
        let good = TestServer.bytes(count: 70_000, seed: 5)
        server.set("/good", TestServer.Route(body: good))
        server.set("/bad", TestServer.Route(body: good))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/good")), dest: good.bin, sha256: \(sha(good))}
                  - {url: \(server.url("/bad")), dest: bad.bin, sha256: \(String(repeating: "ab", count: 32))}
                  - {url: \(server.url("/missing")), dest: missing.bin, retries: 1}
                """
            let session = SyncSession(plan: try plan(yaml, root: dir), options: testOptions())
            let (report, events) = try await runCollecting(session)
            let finished = events.compactMap { event -> ItemResult? in
                if case .itemFinished(let r) = event { r } else { nil }
            }
            #expect(Set(finished.map(\.dest)) == Set(report.items.map(\.dest)))
            for item in report.items {
                let event = try #require(finished.first { $0.dest == item.dest })
                #expect(event.status == item.status)
                #expect(event.bytes == item.bytes)
                #expect(event.sha256Actual == item.sha256Actual)
                #expect(event.error?.code == item.error?.code)
            }
            #expect(report.items.map(\.status) == [.downloaded, .mismatch, .failed])
            #expect(report.exitCode == .integrity)
            // The JSON document says the same as the model it was written from.
            let decoded = try RunReport.decode(try report.jsonData())
            #expect(decoded.items.map(\.status) == report.items.map(\.status))
            #expect(decoded.items.map(\.sha256Actual) == report.items.map(\.sha256Actual))
            #expect(decoded.totals == report.totals)
            #expect(decoded.exitCode == report.exitCode)
        }
    }

    @Test func oneOffDownloadWithOptions() async throws {
        let body = TestServer.bytes(count: 2 << 20, seed: 6)
        server.set("/one", TestServer.Route(body: body, etag: "\"o1\""))
        try await withTestDirectory { dir in
            var download = Download(url: server.url("/one"), destination: dir + "/sub/one.bin")
            download.connections = 3
            download.minSegment = 256 << 10
            download.tag = 42
            download.sha256 = sha(body)
            try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
            let (report, events) = try await runCollecting(try download.session(options: testOptions()))
            let item = try #require(report.items.first)
            #expect(item.status == .downloaded)
            #expect(item.tag == 42)
            #expect(item.connections == 3)
            #expect(fileSHA(dir + "/sub/one.bin") == sha(body))
            #expect(events.contains { if case .itemStarted(let s) = $0 { s.tag == 42 } else { false } })
            #expect(throws: UsageError.self) { try Download(url: "ftp://x/y", destination: dir + "/f").session() }
        }
    }

    @Test func cancelBeforeRunStartsNothing() async throws {
        server.set("/f", TestServer.Route(body: TestServer.bytes(count: 1000, seed: 1)))
        try await withTestDirectory { dir in
            let yaml = "version: 1\nitems:\n  - {url: \(server.url("/f")), dest: f.bin}\n"
            let session = SyncSession(plan: try plan(yaml, root: dir), options: testOptions())
            session.cancel()
            #expect(session.isCancelled)
            let report = try await session.run()
            #expect(report.exitCode == .interrupted)
            #expect(server.requests("/f").isEmpty)
            #expect(!exists(dir + "/f.bin"))
        }
    }

    @Test func maxRateCapsTheWholeRun() async throws {
        // 2 MiB over 4 connections under a 1 MiB/s cap cannot finish much before 2 s,
        // whatever the machine (a lower bound only: slowness never makes it fail).
        let body = TestServer.bytes(count: 2 << 20, seed: 12)
        server.set("/rate", TestServer.Route(body: body, etag: "\"r\""))
        try await withTestDirectory { dir in
            let yaml =
                "version: 1\nitems:\n  - {url: \(server.url("/rate")), dest: r.bin, sha256: \(sha(body)), connections: 4, min_segment: 256KiB}\n"
            var options = testOptions()
            options.maxRate = 1 << 20
            let started = Date()
            let report = try await SyncSession(plan: try plan(yaml, root: dir), options: options).run()
            #expect(report.items.first?.status == .downloaded)
            #expect(Date().timeIntervalSince(started) >= 1.2)
        }
    }

    /// An item found as it should be is announced unless the caller asks only for changes.
    @Test(arguments: [true, false]) func settledItemsAreAnnouncedUnlessNotWanted(announced: Bool) async throws {
        let body = TestServer.bytes(count: 3000, seed: 5)
        server.set("/kept", TestServer.Route(body: body))
        server.set("/changed", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/kept")), dest: kept.bin, sha256: \(sha(body))}
                  - {url: \(server.url("/changed")), dest: changed.bin, sha256: \(sha(body))}
                """
            _ = try await SyncSession(plan: try plan(yaml, root: dir), options: testOptions()).run()
            try FileManager.default.removeItem(atPath: dir + "/changed.bin")
            var options = testOptions()
            options.announcesSettledItems = announced
            let (report, events) = try await runCollecting(SyncSession(plan: try plan(yaml, root: dir), options: options))
            #expect(report.items.map(\.status) == [.unchanged, .downloaded])
            let finished = events.compactMap { event -> String? in
                if case .itemFinished(let result) = event { result.dest } else { nil }
            }
            #expect(finished == (announced ? ["kept.bin", "changed.bin"] : ["changed.bin"]))
        }
    }

    @Test func maxPerHostCapsConnectionsAcrossItems() async throws {
        var lines = ["version: 1", "items:"]
        for index in 0..<8 {
            var route = TestServer.Route(body: TestServer.bytes(count: 200_000, seed: UInt64(index)))
            route.bytesPerSecond = 2_000_000
            server.set("/h\(index)", route)
            lines.append("  - {url: \(server.url("/h\(index)")), dest: h\(index).bin, connections: 1}")
        }
        try await withTestDirectory { dir in
            var options = testOptions()
            options.jobs = 8
            options.maxPerHost = 2
            let report = try await SyncSession(plan: try plan(lines.joined(separator: "\n") + "\n", root: dir), options: options)
                .run()
            #expect(report.items.allSatisfy { $0.status == .unverified })
            // Eight items, at most two connections at a time, kept alive and reused.
            #expect(server.connectionCount <= 2)
        }
    }
}

extension SyncEvent {
    fileprivate var dest: String {
        switch self {
        case .itemStarted(let start): start.dest
        case .progress(let progress): progress.dest
        case .itemFinished(let result): result.dest
        }
    }
}
