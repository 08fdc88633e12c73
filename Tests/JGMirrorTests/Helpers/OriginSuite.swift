import TestServer

/// A suite of the engine against the in-process origin, one fault at a time: each
/// instance has a `TestServer` of its own and a `body` to serve (3 MiB in every suite
/// that conforms), which `serve` puts at a path with a strong ETag and the route's
/// changes a test makes.
protocol OriginSuite {
    var server: TestServer { get }
    var body: [UInt8] { get }
}

extension OriginSuite {
    /// Serves `body` at `path` with ETag `"v1"`, after `change` has set the route's faults.
    func serve(_ path: String = "/f", _ change: (inout TestServer.Route) -> Void = { _ in }) {
        var route = TestServer.Route(body: body, etag: "\"v1\"")
        change(&route)
        server.set(path, route)
    }

    /// Item keys for four connections on regions of at least 256 KiB: `body` in several
    /// requests.
    var segmented: String { "connections: 4\nmin_segment: 256KiB" }

    /// Serves 8 MiB of `seed` at `path` with a strong ETag, `headDelay` seconds before
    /// each response, at `bytesPerSecond` (nil: as fast as it goes), with `fault` on
    /// the requests it names; returns the bytes.
    func serveLarge(
        _ path: String, seed: UInt64, headDelay: Double, bytesPerSecond: Int? = nil,
        fault: @escaping @Sendable (Int) -> TestServer.Fault? = { _ in nil }
    ) -> [UInt8] {
        let large = TestServer.bytes(count: 8 << 20, seed: seed)
        var route = TestServer.Route(body: large, etag: "\"v1\"")
        route.headDelay = headDelay
        route.bytesPerSecond = bytesPerSecond
        route.fault = fault
        server.set(path, route)
        return large
    }

    /// The ranges the requests for `path` asked for: from `start` to `end` (exclusive;
    /// nil for an open end).
    func askedRanges(_ path: String) -> [(start: Int64, end: Int64?)] {
        server.requests(path).compactMap { $0.headers["range"] }.compactMap { header in
            let bounds = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            guard let start = bounds.first.flatMap({ Int64($0) }) else { return nil }
            return (start, bounds.count > 1 ? Int64(bounds[1]).map { $0 + 1 } : nil)
        }
    }

    /// Where each request for `path` asked its `Range` to start, in the order the
    /// server saw them.
    func rangeStarts(_ path: String) -> [Int64] {
        server.requests(path).compactMap { $0.headers["range"] }.compactMap {
            Int64($0.dropFirst("bytes=".count).prefix { $0 != "-" })
        }
    }
}
