import Foundation
import TestServer
import Testing

@testable import JGMirror

/// The engine against a hostile or odd origin: retries that count failures without
/// progress, ranges refused for a while, resumed bytes of another version (docs/engine.md#retries).
@Suite struct EngineTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// Item settings for `size` bytes over four connections; `sized` gives the size,
    /// so the regions are cut before any answer.
    private func fourConnections(_ size: Int, sized: Bool, _ more: String = "") -> String {
        "connections: 4\nmin_segment: 256KiB" + (sized ? "\nsize: \(size)" : "") + more
    }

    @Test(arguments: [3 << 20, 48 << 20], [false, true])
    func anOriginDroppingEveryOtherResponseStillDelivers(size: Int, sized: Bool) async throws {
        let body = TestServer.bytes(count: size, seed: UInt64(size))
        var route = TestServer.Route(body: body, etag: "\"d\"")
        // Odd requests break: some after part of the body, some before any byte.
        route.fault = { index in index % 2 == 1 ? .drop(afterBytes: index % 4 == 1 ? 100_000 : 0) : nil }
        server.set("/d", route)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/d"), sha256: sha(body), extra: fourConnections(size, sized: sized)), in: dir)
            #expect(report.items.first?.status == .downloaded, "\(String(describing: report.items.first?.error))")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test(arguments: [false, true])
    func aShort206EndsAfterTheRetriesWithoutProgress(sized: Bool) async throws {
        let body = TestServer.bytes(count: 4 << 20, seed: 5)
        var route = TestServer.Route(body: body, etag: "\"s\"")
        route.fault = { _ in .short(bytes: 0) }
        server.set("/s", route)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/s"), extra: fourConnections(body.count, sized: sized, "\nretries: 2")), in: dir)
            let item = try #require(report.items.first)
            #expect(item.status == .failed)
            #expect(item.error?.code == .protocolViolation)
            // Each of the 4 connections spends its 2 retries on responses without a
            // byte; with no progress at all, no connection replaces them.
            #expect(server.gets("/s").count <= 4 * 3)
        }
    }

    @Test func aShort206ThatBringsBytesIsProgressAndFinishes() async throws {
        let body = TestServer.bytes(count: 1 << 20, seed: 6)
        var route = TestServer.Route(body: body, etag: "\"p\"")
        route.fault = { index in index % 2 == 0 ? .short(bytes: 200_000) : nil }
        server.set("/p", route)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/p"), sha256: sha(body), extra: "connections: 2\nretries: 1\nmin_segment: 64KiB"),
                in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(server.requests("/p").count < 40)
        }
    }

    @Test func rangesRefusedWithUnchangedValidatorsAreFetchedAsOneStream() async throws {
        // Apache for about a second after a file changes: a weak ETag, and every
        // ranged request whose If-Range is the date answered 200 with the whole file.
        let body = TestServer.bytes(count: 4 << 20, seed: 8)
        var route = TestServer.Route(body: body, etag: "W/\"a1\"", lastModified: "Mon, 23 Nov 2026 10:00:00 GMT")
        route.refuseDateIfRange = true
        server.set("/w", route)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/w"), sha256: sha(body), extra: "connections: 4\nmin_segment: 256KiB"), in: dir)
            let item = try #require(report.items.first)
            #expect(item.status == .downloaded, "\(String(describing: item.error))")
            #expect(item.note?.contains("validators unchanged") == true)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test func aResumedItemFailingItsChecksumIsFetchedOnceMoreFromZero() async throws {
        // Resume state whose validators match, over bytes of another version (a change
        // in the same second at the same size: every validator the server has agrees).
        let length = 2 << 20
        let body = TestServer.bytes(count: length, seed: 11)
        let stale = TestServer.bytes(count: length, seed: 12)
        server.set("/r", TestServer.Route(body: body, etag: "\"same\""))
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: dir + "/mirror/out.bin.jgpart", contents: Data(stale)))
            let state = ResumeState(
                url: server.url("/r"), validators: Validators(etag: "\"same\""), length: Int64(length),
                missing: [ByteRange(lower: Int64(length / 2), upper: Int64(length))])
            try JSONEncoder().encode(state).write(to: URL(fileURLWithPath: dir + "/mirror/out.bin.jgd"))
            let report = try await sync(
                manifest(url: server.url("/r"), sha256: sha(body), extra: "connections: 2\nmin_segment: 256KiB"), in: dir)
            let item = try #require(report.items.first)
            #expect(item.status == .downloaded, "\(String(describing: item.error))")
            #expect(item.note?.contains("fetched again from zero") == true)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            // Both passes count: the resumed half, then the whole file.
            #expect(item.bytesDownloaded == Int64(length / 2 + length), "\(item.bytesDownloaded)")
            #expect(report.totals.bytesDownloaded == item.bytesDownloaded)
            #expect(server.requests("/r").contains { $0.headers["if-range"] == "\"same\"" })
        }
    }

    @Test func aSecondMismatchAfterTheRefetchIsReported() async throws {
        let body = TestServer.bytes(count: 1 << 20, seed: 13)
        server.set("/m", TestServer.Route(body: body, etag: "\"m\""))
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/m"), sha256: String(repeating: "0", count: 64)), in: dir)
            #expect(report.items.first?.status == .mismatch)
            #expect(server.gets("/m").count == 1, "a fresh download is not fetched twice")
        }
    }
}
