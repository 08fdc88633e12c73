import Foundation
import TestServer
import Testing

@testable import JGMirror

/// An interrupted item's resume state (docs/engine.md#resume-state): kept and continued,
/// cleared on request, distrusted after a restart or when the remote changed or the
/// state is torn.
@Suite struct ResumeTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    // The interrupt tests below serve slowly and wait up to a minute for the first
    // resume state: a test process runs many suites on a cooperative pool of one
    // thread per core, and CPU-bound suites beside them can hold it for seconds, in
    // which a faster download would finish before it could be interrupted. A healthy
    // run cancels about a second after starting.
    @Test func cancelKeepsResumeStateAndTheNextRunContinues() async throws {
        let big = TestServer.bytes(count: 8 << 20, seed: 7)
        server.set(
            "/big",
            {
                var r = TestServer.Route(body: big, etag: "\"b1\"")
                r.bytesPerSecond = 64 << 10
                return r
            }())
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/big"), sha256: sha(big), extra: "connections: 2\nmin_segment: 256KiB")
            let path = write(yaml, to: "manifest.yaml", in: dir)
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let plan = Plan(manifest: try Manifest.load(path: path), options: planOptions)
            let session = SyncSession(plan: plan, options: testOptions())
            let running = Task { try await session.run() }
            #expect(await waitFor(seconds: 60) { resumeStateHoldsBytes(dir + "/mirror/out.bin.jgd") })
            session.cancel()
            let first = try await running.value
            #expect(first.items.first?.status == .interrupted)
            #expect(first.exitCode == .interrupted)
            #expect(exists(dir + "/mirror/out.bin.jgpart") && exists(dir + "/mirror/out.bin.jgd"))

            server.update("/big") { $0.bytesPerSecond = nil }
            let second = try await sync(yaml, in: dir)
            let item = try #require(second.items.first)
            #expect(item.status == .downloaded)
            #expect(item.resumedFrom > 0)
            #expect(item.bytesDownloaded < Int64(big.count))
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(big))
            #expect(server.requests("/big").contains { $0.headers["if-range"] == "\"b1\"" })
        }
    }

    @Test func withoutFsyncResumeStateIsTrustedOnlyInTheBootThatWroteIt() async throws {
        let big = TestServer.bytes(count: 8 << 20, seed: 17)
        server.set(
            "/big",
            {
                var r = TestServer.Route(body: big, etag: "\"n1\"")
                r.bytesPerSecond = 64 << 10
                return r
            }())
        try await withTestDirectory { dir in
            let path = write(
                manifest(url: server.url("/big"), sha256: sha(big), extra: "connections: 2\nmin_segment: 256KiB"), to: "m.yaml",
                in: dir)
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let plan = Plan(manifest: try Manifest.load(path: path), options: planOptions)
            var options = testOptions()
            options.durable = false
            let statePath = dir + "/mirror/out.bin.jgd"
            /// Runs until resume state exists, cancels, returns the state's JSON.
            func interruptedRun() async throws -> [String: Any] {
                let session = SyncSession(plan: plan, options: options)
                let running = Task { try await session.run() }
                #expect(await waitFor(seconds: 60) { resumeStateHoldsBytes(statePath) })
                session.cancel()
                #expect(try await running.value.items.first?.status == .interrupted)
                return try loadReport(statePath)
            }

            // The same boot: the state is used.
            #expect(try await interruptedRun()["unsynced_boot"] as? String == ResumeState.bootID)
            server.update("/big") { $0.bytesPerSecond = nil }
            let resumed = try #require(try await SyncSession(plan: plan, options: options).run().items.first)
            #expect(resumed.status == .downloaded && resumed.resumedFrom > 0)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(big))

            // As if the machine had restarted since: the state is not trusted.
            try FileManager.default.removeItem(atPath: dir + "/mirror/out.bin")
            server.update("/big") { $0.bytesPerSecond = 64 << 10 }
            var state = try await interruptedRun()
            state["unsynced_boot"] = "a-boot-before-a-power-cut"
            try JSONSerialization.data(withJSONObject: state).write(to: URL(fileURLWithPath: statePath))
            server.update("/big") { $0.bytesPerSecond = nil }
            let restarted = try #require(try await SyncSession(plan: plan, options: testOptions()).run().items.first)
            #expect(restarted.status == .downloaded && restarted.resumedFrom == 0)
            #expect(restarted.note?.contains("written without fsync before a restart") == true)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(big))
        }
    }

    @Test func cancelAndClearRemovesState() async throws {
        let big = TestServer.bytes(count: 8 << 20, seed: 8)
        server.set(
            "/big",
            {
                var r = TestServer.Route(body: big, etag: "\"b1\"")
                r.bytesPerSecond = 64 << 10
                return r
            }())
        try await withTestDirectory { dir in
            let path = write(
                manifest(url: server.url("/big"), extra: "connections: 2\nmin_segment: 256KiB"), to: "m.yaml", in: dir)
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let session = SyncSession(
                plan: Plan(manifest: try Manifest.load(path: path), options: planOptions), options: testOptions())
            let running = Task { try await session.run() }
            #expect(await waitFor(seconds: 60) { exists(dir + "/mirror/out.bin.jgd") })
            session.cancel(clearingState: true)
            _ = try await running.value
            #expect(!exists(dir + "/mirror/out.bin.jgpart") && !exists(dir + "/mirror/out.bin.jgd"))
        }
    }

    @Test func changedRemoteRestartsInsteadOfSplicing() async throws {
        let old = TestServer.bytes(count: 8 << 20, seed: 9)
        let new = TestServer.bytes(count: 8 << 20, seed: 10)
        server.set(
            "/big",
            {
                var r = TestServer.Route(body: old, etag: "\"old\"")
                r.bytesPerSecond = 64 << 10
                return r
            }())
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/big"), extra: "connections: 2\nmin_segment: 256KiB")
            let path = write(yaml, to: "manifest.yaml", in: dir)
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let session = SyncSession(
                plan: Plan(manifest: try Manifest.load(path: path), options: planOptions), options: testOptions())
            let running = Task { try await session.run() }
            #expect(await waitFor(seconds: 60) { resumeStateHoldsBytes(dir + "/mirror/out.bin.jgd") })
            session.cancel()
            _ = try await running.value
            server.set("/big", TestServer.Route(body: new, etag: "\"new\""))
            let second = try await sync(yaml, in: dir)
            #expect(second.items.first?.status == .unverified)
            #expect(second.items.first?.resumedFrom == 0)
            #expect(second.items.first?.note?.contains("changed") == true)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(new))
        }
    }

    @Test func tornResumeStateRestartsCleanly() async throws {
        serve()
        try await withTestDirectory { dir in
            write("{\"format\": \"jgmirror-res", to: "mirror/out.bin.jgd", in: dir)
            write(String(repeating: "x", count: 1000), to: "mirror/out.bin.jgpart", in: dir)
            let report = try await sync(manifest(url: server.url("/f"), sha256: sha(body), extra: segmented), in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(report.items.first?.note?.contains("unreadable") == true)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }
}
