import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `ItemRunner` feeds the engine a window of items and keeps downloads going while
/// placement or the state database is held up.
@Suite struct ItemRunnerTests {
    /// A manifest of `count` items that all fetch `url`, as `f0.bin`, `f1.bin`, …
    private func copies(_ count: Int, of url: String, sha256: String) -> String {
        (0..<count).reduce("version: 1\nitems:\n") { $0 + "  - url: \(url)\n    dest: f\($1).bin\n    sha256: \(sha256)\n" }
    }

    /// Waits (up to 10 s) until `server` has received `count` GETs of `path`; whether it has.
    private func awaitGets(of path: String, count: Int, from server: TestServer) -> Bool {
        server.waitForRequests(timeout: 10) { requests in requests.count { $0.path == path && $0.method != "HEAD" } >= count }
    }

    /// A large run feeds the engine a window of items at a time instead of queueing
    /// a request, a hasher and a transfer object for every item up front.
    @Test func engineHoldsAWindowOfItemsNotTheWholeRun() async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 4 << 10, seed: 7)
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let count = 120
            var yaml = "version: 1\nitems:\n"
            for index in 0..<count {
                yaml += "  - url: \(server.url("/f"))\n    dest: d\(index % 3)/f\(index).bin\n    sha256: \(sha(body))\n"
            }
            let manifest = try Manifest.parse(yaml, name: dir + "/m.yaml")
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let plan = Plan(manifest: manifest, options: planOptions)
            var options = testOptions()
            options.jobs = 2
            let engine = try TransferEngine(configuration: options.engineConfiguration) { _ in }
            defer { engine.shutdown() }
            let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            continuation.finish()
            _ = events
            try FileManager.default.createDirectory(atPath: plan.root, withIntermediateDirectories: true)
            let root = try RootDirectory(path: plan.root)
            let results = await ItemRunner(
                items: plan.items, options: options, engine: engine, events: continuation, root: root,
                pool: WorkPool(computingThreads: 2), state: StateOpening(.none())
            ).run().all
            #expect(results.count == count)
            #expect(results.allSatisfy { $0.status == .downloaded })
            #expect(fileSHA(dir + "/mirror/d2/f119.bin") == sha(body))
            let held = engine.mostHeld.load(ordering: .relaxed)
            #expect(held > 0 && held <= 32, "the engine held \(held) items at once")
        }
    }

    /// Downloads go on while placement is held up (a long sync, a slow disk): the
    /// finished files are verified, and the next items submitted, off placement's
    /// thread. Here the first batch's records wait until 80 of 120 files were fetched.
    @Test func downloadsGoOnWhilePlacementIsHeldUp() async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 4 << 10, seed: 5)
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = copies(120, of: server.url("/f"), sha256: sha(body))
            var options = testOptions()
            options.jobs = 2
            let reached = Locked<Bool?>(nil)
            options.beforeRecording = {
                if reached.value == nil {
                    let fetched = awaitGets(of: "/f", count: 80, from: server)
                    reached.withLock { $0 = fetched }
                }
                return true
            }
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.status == .downloaded })
            #expect(reached.value == true, "downloads stopped while placement was held up")
        }
    }

    /// The state database opens beside the first requests (`StateOpening`): missing
    /// files are fetched while it is held up, and a present file's look waits for its
    /// record, which still settles it without hashing.
    @Test func theFirstRequestsDoNotWaitForTheStateDatabase() async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 4 << 10, seed: 6)
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = copies(3, of: server.url("/f"), sha256: sha(body))
            var options = testOptions()
            options.racyWindow = 0
            let first = try await sync(yaml, in: dir, options: options)
            #expect(first.items.allSatisfy { $0.status == .downloaded })
            // The walk goes in plan order: the missing file first, then the present ones.
            try FileManager.default.removeItem(atPath: dir + "/mirror/f0.bin")
            let fetchedWhileHeld = Locked<Bool?>(nil)
            options.beforeStateOpens = {
                let fetched = awaitGets(of: "/f", count: 4, from: server)
                fetchedWhileHeld.withLock { $0 = fetched }
            }
            let hashed = Locked<[String]>([])
            options.hashedFile = { dest in hashed.withLock { $0.append(dest) } }
            let second = try await sync(yaml, in: dir, options: options)
            #expect(fetchedWhileHeld.value == true, "the missing file waited for the state database")
            #expect(second.items.map(\.status) == [.downloaded, .unchanged, .unchanged])
            #expect(hashed.value.isEmpty, "the records vouched for the present files: \(hashed.value)")
        }
    }

    /// Items still waiting outside the engine when `--fail-fast` stops the run are
    /// reported as skipped, like the ones queued inside it.
    @Test func failFastSkipsItemsWaitingOutsideTheEngine() async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 4 << 10, seed: 8)
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            var yaml = "version: 1\nitems:\n  - url: \(server.url("/missing"))\n    dest: first.bin\n"
            for index in 0..<80 { yaml += "  - url: \(server.url("/f"))\n    dest: f\(index).bin\n" }
            var options = testOptions()
            options.jobs = 1
            options.failFast = true
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.count == 81)
            #expect(report.items[0].status == .failed)
            #expect(report.items.dropFirst().allSatisfy { $0.status == .skipped })
            #expect(report.exitCode == .transferFailed)
            // Items prepared ahead of their turn leave no part file behind.
            let left = try FileManager.default.contentsOfDirectory(atPath: dir + "/mirror").filter { $0.hasSuffix(".jgpart") }
            #expect(left.isEmpty, "\(left)")
        }
    }
}
