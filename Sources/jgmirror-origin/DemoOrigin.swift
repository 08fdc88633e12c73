import ArgumentParser
import Foundation
import JGMirror
import TestServer

/// A local origin for the demo and the benchmarks: generated Self.files with Range,
/// ETag and a per-connection speed limit on the large one, plus a SHA256SUMS file.
///
/// Usage: `jgmirror-origin [--port N] [--rate BYTES_PER_SECOND] [--file PATH:BYTES]…
/// [--drop-every-other BYTES]`; prints `READY URL` on stdout once listening and serves
/// until killed. `--file` adds a generated file (seeded by its path, unthrottled; its
/// SHA-256 is printed as `FILE PATH SHA256` before `READY`); `--drop-every-other`
/// closes the connection after that many body bytes of every other response to
/// each path (the second, fourth, … request), as a hostile origin or a flaky path
/// would.
@main
struct DemoOrigin: ParsableCommand {
    /// Everything after the program name, read below as before.
    @Argument(parsing: .captureForPassthrough) var arguments: [String] = []

    /// (path, size, seed, throttled)
    static let files: [(String, Int, UInt64, Bool)] = [
        ("/releases/os.iso", 48 << 20, 1, true),
        ("/releases/tools.tar", 6 << 20, 2, false),
        ("/releases/notes.txt", 20_000, 3, false),
        ("/data/a.bin", 2 << 20, 4, false),
        ("/data/b.bin", 3 << 20, 5, false),
        ("/data/c.bin", 512 << 10, 6, false),
    ]

    func run() throws {
        var port = 0
        var rate = 4_000_000
        var extra: [(String, Int)] = []
        var dropAfter: Int?
        var arguments = self.arguments[...]
        while let argument = arguments.popFirst() {
            switch argument {
            case "--port": port = Int(arguments.popFirst() ?? "") ?? 0
            case "--rate": rate = Int(arguments.popFirst() ?? "") ?? rate
            case "--file":
                let spec = (arguments.popFirst() ?? "").split(separator: ":", maxSplits: 1)
                guard spec.count == 2, spec[0].hasPrefix("/"), let size = Int(spec[1]), size >= 0 else { throw Self.usage() }
                extra.append((String(spec[0]), size))
            case "--drop-every-other":
                guard let bytes = Int(arguments.popFirst() ?? ""), bytes >= 0 else { throw Self.usage() }
                dropAfter = bytes
            default: throw Self.usage()
            }
        }
        let server = try TestServer(port: port)
        var sums = ""
        for (path, size, seed, throttled) in Self.files {
            let body = TestServer.bytes(count: size, seed: seed)
            var route = TestServer.Route(body: body, etag: "\"demo-\(seed)\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT")
            if throttled { route.bytesPerSecond = rate }
            server.set(path, route)
            if path.hasPrefix("/data/") {
                sums += "\(Checksum.sha256(body) ?? "")  \(path.dropFirst("/data/".count))\n"
            }
        }
        server.set("/data/SHA256SUMS", TestServer.Route(body: Array(sums.utf8), etag: "\"sums\""))
        for (path, size) in extra {
            // A seed from the path (FNV-1a), so the same path is the same file in every run.
            let seed = path.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
            let body = TestServer.bytes(count: size, seed: seed)
            server.set(
                path, TestServer.Route(body: body, etag: "\"extra-\(seed)\"", lastModified: "Sun, 22 Nov 2026 10:00:00 GMT"))
            FileHandle.standardOutput.write(Data("FILE \(path) \(Checksum.sha256(body) ?? "")\n".utf8))
        }
        if let dropAfter {
            for path in Self.files.map(\.0) + extra.map(\.0) {
                server.update(path) { $0.fault = { $0 % 2 == 1 ? .drop(afterBytes: dropAfter) : nil } }
            }
        }
        FileHandle.standardOutput.write(Data("READY \(server.baseURL)\n".utf8))
        while true { sleep(3600) }
    }

    /// Says how to call the tool; thrown, it ends the process with status 2.
    static func usage() -> ArgumentParser.ExitCode {
        FileHandle.standardError.write(
            Data(
                "usage: jgmirror-origin [--port N] [--rate BYTES_PER_SECOND] [--file PATH:BYTES]… [--drop-every-other BYTES]\n"
                    .utf8))
        return ArgumentParser.ExitCode(2)
    }
}
