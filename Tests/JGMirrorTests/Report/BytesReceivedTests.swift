import Foundation
import TestServer
import Testing

@testable import JGMirror

/// What a server sent beside what the run kept (docs/reports.md#json-report): an
/// item's `bytes_received`, the run's, the origin's, in the report and the metrics.
@Suite struct BytesReceivedTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    @Test func bytesPastARegionsEndAreReceivedThoughNotKept() async throws {
        // Every region's 206 runs to the end of the file: the engine keeps its region
        // and ends the request there; what libcurl handed over past the end is
        // received, not kept.
        let large = TestServer.bytes(count: 8 << 20, seed: 31)
        var route = TestServer.Route(body: large, etag: "\"v1\"")
        route.fault = { _ in .toTheEnd }
        server.set("/toend", route)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/toend"), sha256: sha(large), extra: "connections: 4\nsize: \(large.count)"), in: dir)
            let item = try #require(report.items.first)
            #expect(item.status == .downloaded)
            #expect(item.bytesDownloaded == Int64(large.count))
            #expect(item.bytesReceived > item.bytesDownloaded)
            #expect(report.totals.bytesReceived == item.bytesReceived)
            let host = try #require(report.hosts.first)
            #expect(host.bytes == item.bytesDownloaded && host.bytesReceived == item.bytesReceived)
            let json = report.json.rendered()
            #expect(json.contains("\"bytes_received\": \(item.bytesReceived)"))
            let metrics = RunMetrics.render(report)
            #expect(metrics.contains("jgmirror_last_run_bytes_received{"))
            #expect(metrics.contains("jgmirror_host_bytes_received{"))
        }
    }

    @Test func aFileFetchedAsAskedIsReceivedOnce() async throws {
        let body = TestServer.bytes(count: 3 << 20, seed: 32)
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), sha256: sha(body), extra: "connections: 2"), in: dir)
            let item = try #require(report.items.first)
            #expect(item.status == .downloaded)
            #expect(item.bytesReceived == Int64(body.count) && item.bytesDownloaded == Int64(body.count))
            #expect(report.hosts.first?.bytesReceived == Int64(body.count))
        }
    }

    @Test func reportsWrittenBeforeBytesReceivedReadAsReceivingWhatTheyKept() throws {
        let item = try JSONDecoder().decode(
            ItemResult.self,
            from: Data(#"{"dest": "a", "url": "http://h/a", "status": "downloaded", "bytes_downloaded": 7}"#.utf8))
        #expect(item.bytesReceived == 7)
        let host = try JSONDecoder().decode(
            HostSummary.self,
            from: Data(
                #"{"origin": "http://h", "requests": 1, "bytes": 9, "failures": 0, "throttled": 0, "cooling_s": 0, "state": "up"}"#
                    .utf8))
        #expect(host.bytesReceived == 9)
    }
}
