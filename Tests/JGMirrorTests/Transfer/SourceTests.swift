import Foundation
import TestServer
import Testing

@testable import JGMirror

/// An item's sources: redirects followed or refused (docs/engine.md#redirects) and mirrors
/// sharing the connections, a dead primary left alone, against the in-process origin.
@Suite struct SourceTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    @Test func redirectsAreFollowed() async throws {
        serve()
        serve("/old") { $0.redirect = server.url("/f") }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/old"), sha256: sha(body), extra: segmented), in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test func redirectToFileIsRefused() async throws {
        serve("/evil") { $0.redirect = "file:///etc/passwd" }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/evil")), in: dir)
            #expect(report.items.first?.status == .failed)
            #expect(report.items.first?.error?.code == .redirect)
        }
    }

    @Test func mirrorServesWhenPrimaryIsMissing() async throws {
        serve("/mirror/f")
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/gone"), sha256: sha(body), extra: "mirrors: [\(server.url("/mirror/f"))]"), in: dir)
            #expect(report.items.first?.status == .downloaded)
        }
    }

    @Test func connectionsAreSpreadOverMirrors() async throws {
        serve("/a/f")
        serve("/b/f")
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/a/f"), sha256: sha(body), extra: segmented + "\nmirrors: [\(server.url("/b/f"))]"),
                in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(report.items.first?.connections == 4)
            #expect(server.requests("/a/f").count >= 2)
            #expect(server.requests("/b/f").count >= 1)
        }
    }

    @Test func deadPrimaryGetsNoNewConnections() async throws {
        // The primary fails the first request with 404; every connection uses the mirror.
        serve("/m/f")
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/gone"), sha256: sha(body), extra: segmented + "\nmirrors: [\(server.url("/m/f"))]"),
                in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(server.gets("/gone").count == 1)
            #expect(server.requests("/m/f").count >= 4)
        }
    }
}
