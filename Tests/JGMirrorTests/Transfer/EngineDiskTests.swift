import Foundation
import TestServer
import Testing

@testable import JGMirror

/// The engine thread hands disk work to the items' queues and does not wait for it.
@Suite struct EngineDiskTests {
    /// An item that fails keeps its resume state, written (after a sync) on the item's
    /// queue. Here that sync is held until the next item's request reaches the server:
    /// with one job, only an engine that goes on while the state is written sends it.
    /// The failure is reported once the state is on disk.
    @Test func theNextItemStartsWhileAFailedItemsLastCheckpointIsWritten() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let body = TestServer.bytes(count: 4 << 20, seed: 21)
        var failing = TestServer.Route(body: body, etag: "\"v1\"")
        // 256 KiB, then the connection closes; every later request is refused.
        failing.fault = { $0 == 0 ? .drop(afterBytes: 256 << 10) : .status(500) }
        server.set("/fails", failing)
        server.set("/next", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            var options = testOptions()
            options.jobs = 1
            options.checkpointInterval = 3600
            // The first sync is the failed item's last checkpoint (no flush comes at 4 MiB).
            let nextStarted = Locked<Bool?>(nil)
            options.engine.dataSync = { fd in
                if nextStarted.value == nil {
                    let seen = server.waitForRequests(timeout: 20) { requests in
                        requests.contains { $0.path == "/next" && $0.method != "HEAD" }
                    }
                    nextStarted.withLock { $0 = seen }
                }
                return fdatasync(fd)
            }
            let yaml = """
                version: 1
                items:
                  - url: \(server.url("/fails"))
                    dest: a.bin
                    retries: 0
                    connections: 1
                  - url: \(server.url("/next"))
                    dest: b.bin
                    sha256: \(sha(body))

                """
            let report = try await sync(yaml, in: dir, options: options)
            #expect(nextStarted.value == true, "the engine waited for the failed item's checkpoint")
            #expect(report.items.map(\.status) == [.failed, .downloaded])
            // The state was on disk when the run ended: the next run resumes from it.
            let again = try await sync(yaml, in: dir, options: options)
            #expect((again.items.first?.resumedFrom ?? 0) > 0)
        }
    }
}
