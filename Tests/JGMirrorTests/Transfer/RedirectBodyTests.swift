import Foundation
import JGMirror
import TestServer
import Testing

/// Redirects that carry a body, as Apache's `Redirect 302` (an HTML page with a
/// `Content-Length`) and Caddy's 308 (a chunked one) send them, are followed for
/// items, lists and `get`; the body is discarded (docs/engine.md#redirects).
@Suite struct RedirectBodyTests {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 31)

    init() throws {
        server = try TestServer()
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
    }

    /// The two shapes of the acceptance test: a 302 with a 4 KiB body, a 308 with a chunked one.
    static let shapes: [(Int, TestServer.RedirectBody)] = [(302, .sized(4096)), (308, .chunked(4096)), (301, .none)]

    /// `/old` redirects to `target` with `status` and `payload`.
    func redirect(_ path: String = "/old", to target: String, status: Int, payload: TestServer.RedirectBody) {
        var moved = TestServer.Route(body: [])
        moved.redirect = target
        moved.redirectStatus = status
        moved.redirectBody = payload
        server.set(path, moved)
    }

    @Test(arguments: shapes)
    func singleConnectionItemFollows(status: Int, payload: TestServer.RedirectBody) async throws {
        redirect(to: server.url("/f"), status: status, payload: payload)
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/old"), sha256: sha(body), extra: "connections: 1"), in: dir)
            #expect(report.items.first?.status == .downloaded, "\(String(describing: report.items.first?.error))")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(report.items.first?.bytesDownloaded == Int64(body.count))
        }
    }

    @Test(arguments: shapes)
    func multiConnectionItemFollows(status: Int, payload: TestServer.RedirectBody) async throws {
        redirect(to: server.url("/f"), status: status, payload: payload)
        try await withTestDirectory { dir in
            let report = try await sync(
                manifest(url: server.url("/old"), sha256: sha(body), extra: "connections: 4\nmin_segment: 256KiB"), in: dir)
            #expect(report.items.first?.status == .downloaded, "\(String(describing: report.items.first?.error))")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(server.gets("/f").count >= 4)
        }
    }

    @Test(arguments: shapes)
    func sizedMultiConnectionItemFollows(status: Int, payload: TestServer.RedirectBody) async throws {
        redirect(to: server.url("/f"), status: status, payload: payload)
        try await withTestDirectory { dir in
            let extra = "connections: 4\nmin_segment: 256KiB\nsize: \(body.count)"
            let report = try await sync(manifest(url: server.url("/old"), sha256: sha(body), extra: extra), in: dir)
            #expect(report.items.first?.status == .downloaded, "\(String(describing: report.items.first?.error))")
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test(arguments: shapes)
    func aSetsListBehindARedirectIsFollowed(status: Int, payload: TestServer.RedirectBody) async throws {
        let file = TestServer.bytes(count: 50_000, seed: 32)
        server.set("/latest/a.iso", TestServer.Route(body: file))
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array((sha(file) + "  a.iso\n").utf8)))
        redirect("/latest/SHA256SUMS", to: server.url("/rel/SHA256SUMS"), status: status, payload: payload)
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                sets:
                  - sums: \(server.url("/latest/SHA256SUMS"))
                    dest: rel/
                """
            var manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
            try await manifest.expandSets(options: testOptions())
            var options = PlanOptions()
            options.root = dir + "/mirror"
            let report = try await SyncSession(plan: Plan(manifest: manifest, options: options), options: testOptions()).run()
            #expect(report.items.map(\.dest) == ["rel/a.iso"])
            #expect(fileSHA(dir + "/mirror/rel/a.iso") == sha(file))
        }
    }

    @Test func theBinaryFollowsARedirectWithABody() async throws {
        redirect(to: server.url("/f"), status: 302, payload: .sized(4096))
        redirect("/caddy", to: server.url("/f"), status: 308, payload: .chunked(4096))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - url: \(server.url("/old"))
                    dest: apache.bin
                    sha256: \(sha(body))
                  - url: \(server.url("/caddy"))
                    dest: caddy.bin
                    connections: 1
                """
            let path = write(yaml, to: "manifest.yaml", in: dir)
            let run = try await execute([
                "sync", path, "--root", dir + "/mirror", "--progress", "none", "--report", dir + "/r.json",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/mirror/apache.bin") == sha(body) && fileSHA(dir + "/mirror/caddy.bin") == sha(body))
            let got = try await execute(["get", server.url("/caddy"), "-o", dir + "/got.bin", "--progress", "none"])
            #expect(got.status == 0, "\(got.stderr) \(got.stdout)")
            #expect(fileSHA(dir + "/got.bin") == sha(body))
        }
    }
}
