import Foundation
import TestServer

/// A server that accepts every connection on `paths` and closes it without a word.
func silentServer(paths: [String]) throws -> TestServer {
    let server = try TestServer()
    for path in paths {
        var route = TestServer.Route(body: [1])
        route.fault = { _ in .raw([]) }
        server.set(path, route)
    }
    return server
}

/// Thirty files, `file00.bin` to `file29.bin`, the one at `index` of `size + index * step`
/// bytes made from seed `seed + index`, each served under every prefix of `prefixes`
/// (`/rel/`, …); returns them by name.
func serveThirtyFiles(on server: TestServer, at prefixes: [String], size: Int, step: Int, seed: UInt64) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    for index in 0..<30 {
        let name = String(format: "file%02d.bin", index)
        let body = TestServer.bytes(count: size + index * step, seed: seed + UInt64(index))
        files[name] = body
        for prefix in prefixes { server.set(prefix + name, TestServer.Route(body: body)) }
    }
    return files
}
