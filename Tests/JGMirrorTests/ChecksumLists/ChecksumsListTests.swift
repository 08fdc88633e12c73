import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `checksums:` lists (docs/manifest.md#checksums-lists) give items their hashes, fetched
/// once, and a list that contradicts the manifest is a manifest error.
@Suite struct ChecksumsListTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    @Test func checksumsFileCoversEveryItemFetchedOnce() async throws {
        let other = TestServer.bytes(count: 5000, seed: 77)
        serve("/d/a.bin")
        server.set("/d/sub/b.bin", TestServer.Route(body: other))
        server.set("/d/c.bin", TestServer.Route(body: other))
        // Both line forms, a comment, a name in a subfolder, and a wrong hash for c.bin.
        let sums = "# release sums\n\(sha(body))  a.bin\n\(sha(other)) *sub/b.bin\n\(String(repeating: "0", count: 64))  c.bin\n"
        server.set("/d/SHA256SUMS", TestServer.Route(body: Array(sums.utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(server.url("/d/SHA256SUMS"))]
                items:
                  - {url: \(server.url("/d/a.bin")), dest: a.bin}
                  - {url: \(server.url("/d/sub/b.bin")), dest: b.bin}
                  - {url: \(server.url("/d/c.bin")), dest: c.bin}
                """
            let report = try await sync(yaml, in: dir)
            #expect(report.items.map(\.status) == [.downloaded, .downloaded, .mismatch])
            #expect(report.items[1].sha256Expected == sha(other))
            #expect(server.requests("/d/SHA256SUMS").count == 1)
        }
    }

    @Test func checksumsFileContradictingTheManifestIsAManifestError() async throws {
        serve("/d/a.bin")
        server.set("/d/SHA256SUMS", TestServer.Route(body: Array("\(String(repeating: "1", count: 64))  a.bin\n".utf8)))
        await withTestDirectory { dir in
            let yaml =
                "version: 1\nchecksums: [\(server.url("/d/SHA256SUMS"))]\nitems:\n  - url: \(server.url("/d/a.bin"))\n    sha256: \(sha(body))\n"
            await #expect(throws: SyncError.self) { try await sync(yaml, in: dir) }
            #expect(server.requests("/d/a.bin").isEmpty)
        }
    }

    @Test func checksumsFileSuppliesChecksums() async throws {
        serve("/d/a.bin")
        server.set("/d/SHA256SUMS", TestServer.Route(body: Array("# sums\n\(sha(body))  a.bin\n".utf8)))
        try await withTestDirectory { dir in
            let yaml = "version: 1\nchecksums: [\(server.url("/d/SHA256SUMS"))]\nitems:\n  - url: \(server.url("/d/a.bin"))\n"
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(report.items.first?.sha256Expected == sha(body))
        }
    }
}
