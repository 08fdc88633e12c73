import Foundation
import TestServer
import Testing

@testable import JGMirror

/// What a run keeps out of the tree around the engine: a mismatch goes to quarantine and
/// an unchanged file costs no request (docs/sync.md#checksum-mismatch); a root another
/// sync holds, or a destination through a symlink out of the root, is refused before any
/// request (docs/state.md#one-sync-per-tree, docs/safety.md#confinement-to-the-root).
@Suite struct SyncGuardTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    @Test func mismatchQuarantinesAndUnchangedSendsNothing() async throws {
        serve()
        try await withTestDirectory { dir in
            let wrong = String(repeating: "0", count: 64)
            let bad = try await sync(manifest(url: server.url("/f"), sha256: wrong), in: dir)
            #expect(bad.items.first?.status == .mismatch)
            #expect(bad.items.first?.sha256Actual == sha(body))
            #expect(bad.exitCode == .integrity)
            #expect(exists(dir + "/mirror/.jgmirror/quarantine/out.bin") && !exists(dir + "/mirror/out.bin"))

            let good = try await sync(manifest(url: server.url("/f"), sha256: sha(body)), in: dir)
            #expect(good.items.first?.status == .downloaded)
            let before = server.requests().count
            let again = try await sync(manifest(url: server.url("/f"), sha256: sha(body)), in: dir)
            #expect(again.items.first?.status == .unchanged)
            #expect(server.requests().count == before)
        }
    }

    @Test func secondSyncOnALockedRootIsRefused() async throws {
        serve()
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            let lock = try StateFolder(root: dir + "/mirror", shard: nil)
            await #expect(throws: SyncError.self) { try await sync(manifest(url: server.url("/f")), in: dir) }
            withExtendedLifetime(lock) {}
        }
    }

    @Test func symlinkOutOfTheRootIsRefused() async throws {
        serve()
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/mirror/link", withDestinationPath: dir + "/outside")
            let yaml = "version: 1\nitems:\n  - url: \(server.url("/f"))\n    dest: link/out.bin\n"
            do {
                _ = try await sync(yaml, in: dir)
                Issue.record("expected a refusal")
            } catch {
                #expect((error as? SyncError)?.exitCode == .usage)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/outside").isEmpty)
            #expect(server.requests().isEmpty)
        }
    }
}
