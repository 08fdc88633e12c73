import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Racy validators (issue 41, point 10): a copy taken in the same second as the file's
/// last change proves nothing about a change in that second, so the next run fetches
/// it unconditionally until a later copy settles it. The servers stamp `Last-Modified`
/// equal to `Date` (or in the future), so that no test waits for a clock.
@Suite struct RacyValidatorTests {
    let server: TestServer
    /// When the upstream's files last changed, and when the server says it answered.
    let changed = "Sat, 28 Nov 2026 01:06:15 GMT"
    let later = "Sat, 28 Nov 2026 01:06:20 GMT"
    /// nginx's ETag: hex mtime and hex size.
    let nginxTag = "\"6929055f-3e8\""

    init() throws { server = try TestServer() }

    /// Ten files of 1000 bytes; `variant` changes the fourth one's bytes, not its size.
    func files(_ variant: UInt64) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for index in 0..<10 {
            files[String(format: "f%02d.bin", index)] = TestServer.bytes(
                count: 1000, seed: index == 3 ? 700 + variant : 600 + UInt64(index))
        }
        return files
    }

    func sums(_ files: [String: [UInt8]]) -> [UInt8] {
        Array(files.keys.sorted().map { sha(files[$0]!) + "  " + $0 }.joined(separator: "\n").utf8) + [0x0A]
    }

    /// Serves `files` and their list, every answer stamped `Date: date` and
    /// `Last-Modified: changed`, with the same ETags whatever the bytes: what nginx
    /// sends for files rewritten within one second at the same size.
    func serve(_ files: [String: [UInt8]], date: String) {
        for (name, body) in files {
            var route = TestServer.Route(body: body, etag: nginxTag, lastModified: changed)
            route.extraHeaders = ["Date: \(date)"]
            server.set("/r/" + name, route)
        }
        var list = TestServer.Route(body: sums(files), etag: nginxTag, lastModified: changed)
        list.extraHeaders = ["Date: \(date)"]
        server.set("/r/SHA256SUMS", list)
    }

    /// The `If-None-Match` of each GET of `path` after the first `skipping`.
    func conditions(_ path: String, after skipping: Int) -> [String?] {
        server.requests(path).filter { $0.method == "GET" }.dropFirst(skipping).map { $0.headers["if-none-match"] }
    }

    @Test func aListChangedInTheSecondItWasFetchedIsFetchedAgainUntilALaterCopySettlesIt() async throws {
        serve(files(0), date: changed)
        try await withTestDirectory { dir in
            let yaml = "version: 1\nroot: mirror\nsets:\n  - {sums: \(server.url("/r/SHA256SUMS")), dest: rel/}\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            // Rewritten in the same second, same size: the validators do not move.
            serve(files(1), date: changed)
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/mirror/rel/f03.bin") == sha(files(1)["f03.bin"]!))
            #expect(conditions("/r/SHA256SUMS", after: 1) == [nil])
            // A copy taken later settles it: fetched whole once more, then asked for conditionally.
            serve(files(1), date: later)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            #expect(conditions("/r/SHA256SUMS", after: 2) == [nil, nginxTag])
        }
    }

    /// An item without a checksum is refreshed by its validators: the same rule.
    @Test func anItemRefreshedByValidatorsIsFetchedAgainAfterARacyCopy() async throws {
        serve(files(0), date: changed)
        try await withTestDirectory { (dir: String) async throws in
            let yaml = "version: 1\nroot: mirror\nitems:\n  - {url: \(server.url("/r/f03.bin")), dest: f03.bin}\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            serve(files(1), date: changed)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            #expect(fileSHA(dir + "/mirror/f03.bin") == sha(files(1)["f03.bin"]!))
            #expect(conditions("/r/f03.bin", after: 1) == [nil])
        }
    }

    /// The same against a real nginx on loopback: its files' modification time is set
    /// in the future, so each copy is taken "before" its `Last-Modified`, as a copy
    /// taken within the second of a change is.
    @Test func aListRewrittenAtTheSameSizeAndTimeIsFetchedAgainFromNginx() async throws {
        try await withTestDirectory { dir in
            guard let nginx = try await LocalNginx.start(in: dir + "/nginx") else { return }
            defer { nginx.stop() }
            let stamp = Date().addingTimeInterval(3600)
            func publish(_ files: [String: [UInt8]]) throws {
                for (name, body) in files.merging(["SHA256SUMS": sums(files)], uniquingKeysWith: { $1 }) {
                    let file = nginx.www + "/r/" + name
                    try FileManager.default.createDirectory(atPath: nginx.www + "/r", withIntermediateDirectories: true)
                    try Data(body).write(to: URL(fileURLWithPath: file))
                    try FileManager.default.setAttributes([.modificationDate: stamp], ofItemAtPath: file)
                }
            }
            try publish(files(0))
            let yaml = "version: 1\nroot: mirror\nsets:\n  - {sums: \(nginx.url)/r/SHA256SUMS, dest: rel/}\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            try publish(files(1))
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/mirror/rel/f03.bin") == sha(files(1)["f03.bin"]!))
        }
    }

    // MARK: The rule, as pure values

    @Test func theRuleReadsTheValidatorsAgainstTheFetchTime() throws {
        let changed = try #require(HTTPDate.parse(self.changed))
        let dated = Validators(etag: nginxTag, lastModified: self.changed)
        #expect(dated.proveNothing(fetchedAt: Double(changed)))
        #expect(dated.proveNothing(fetchedAt: Double(changed) + 0.99))
        #expect(dated.proveNothing(fetchedAt: Double(changed) - 30))
        #expect(!dated.proveNothing(fetchedAt: Double(changed) + 1))
        #expect(Validators(lastModified: "yesterday").proveNothing(fetchedAt: Double(changed)))
        // Without a Last-Modified, an ETag made of a time, or a weak one, proves nothing.
        for etag in [nginxTag, "\"1a2b-5af1c2d3e4f50\"", "\"3e8-1a2b-5af1c2d3e4f50\"", "W/\"v1\""] {
            #expect(Validators(etag: etag).proveNothing(fetchedAt: 4e9), "\(etag)")
        }
        for etag in ["\"v1\"", "\"d41d8cd98f00b204e9800998ecf8427e\"", "\"a-b-c-d\""] {
            #expect(!Validators(etag: etag).proveNothing(fetchedAt: 4e9), "\(etag)")
        }
        #expect(!Validators().proveNothing(fetchedAt: 0))
        // The server's Date wins over the local clock; without one, the local clock.
        #expect(dated.judged(date: later, now: Double(changed)).racy == false)
        #expect(dated.judged(date: self.changed, now: Double(changed) + 60).racy)
        #expect(dated.judged(date: nil, now: Double(changed) + 60).racy == false)
        #expect(dated.judged(date: self.changed, now: 0).lasting == Validators())
        #expect(dated.judged(date: later, now: 0).lasting == dated)
        var head = ResponseHead()
        head.consume(line: "HTTP/1.1 200 OK\r\n")
        head.consume(line: "Date: \(later)\r\n")
        #expect(head.date == later)
    }
}

/// nginx on loopback, serving `www` from a configuration in a folder of the test's:
/// for checks against a real server's validators. Nil, with the reason printed, where
/// nginx is not installed or does not start.
struct LocalNginx {
    let process: Process
    let www: String
    let url: String

    static func start(in prefix: String) async throws -> LocalNginx? {
        let binary = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let binary else {
            print("skipped: nginx is not installed")
            return nil
        }
        let www = prefix + "/www"
        try FileManager.default.createDirectory(atPath: www, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        // The kernel picks a free port; nginx takes it over (a race another test could
        // lose only by binding the same port within microseconds).
        let port = try freePort()
        let user = geteuid() == 0 ? "user root root;" : ""
        let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(prefix)/tmp/\($0);" }
        let config = """
            \(user)
            worker_processes 1; daemon off; pid \(prefix)/nginx.pid; error_log \(prefix)/error.log warn;
            events { worker_connections 64; }
            http { access_log off; \(temporary.joined(separator: " "))
              server { listen 127.0.0.1:\(port); root \(www); } }
            """
        try config.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf"]
        // None of the test process's outputs: an nginx outliving a test process that
        // died would hold `swift test`'s pipe open, and the run would wait forever.
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = await waitFor(seconds: 20) { process.isRunning && canConnect(port: port) }
        guard ready else {
            print("skipped: nginx did not start (see \(prefix)/error.log)")
            if process.isRunning { process.terminate() }
            return nil
        }
        return LocalNginx(process: process, www: www, url: "http://127.0.0.1:\(port)")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else { throw CocoaError(.fileWriteUnknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
