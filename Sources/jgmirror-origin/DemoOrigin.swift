import Foundation
import JGMirror
import TestServer

/// A local origin for the demo and the benchmarks: generated files with Range,
/// ETag and a per-connection speed limit on the large one, plus a SHA256SUMS file.
///
/// Usage: `jgmirror-origin [--port N] [--rate BYTES_PER_SECOND]`; prints `READY URL`
/// on stdout once listening and serves until killed.
@main
enum DemoOrigin {
    /// (path, size, seed, throttled)
    static let files: [(String, Int, UInt64, Bool)] = [
        ("/releases/os.iso", 48 << 20, 1, true),
        ("/releases/tools.tar", 6 << 20, 2, false),
        ("/releases/notes.txt", 20_000, 3, false),
        ("/data/a.bin", 2 << 20, 4, false),
        ("/data/b.bin", 3 << 20, 5, false),
        ("/data/c.bin", 512 << 10, 6, false),
    ]

    static func main() throws {
        var port = 0
        var rate = 4_000_000
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--port": port = Int(arguments.popFirst() ?? "") ?? 0
            case "--rate": rate = Int(arguments.popFirst() ?? "") ?? rate
            default:
                FileHandle.standardError.write(Data("usage: jgmirror-origin [--port N] [--rate BYTES_PER_SECOND]\n".utf8))
                exit(2)
            }
        }
        let server = try TestServer(port: port)
        var sums = ""
        for (path, size, seed, throttled) in files {
            let body = TestServer.bytes(count: size, seed: seed)
            var route = TestServer.Route(body: body, etag: "\"demo-\(seed)\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT")
            if throttled { route.bytesPerSecond = rate }
            server.set(path, route)
            if path.hasPrefix("/data/") {
                sums += "\(Checksum.sha256(body) ?? "")  \(path.dropFirst("/data/".count))\n"
            }
        }
        server.set("/data/SHA256SUMS", TestServer.Route(body: Array(sums.utf8), etag: "\"sums\""))
        FileHandle.standardOutput.write(Data("READY \(server.baseURL)\n".utf8))
        while true { sleep(3600) }
    }
}
