import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Which origin a redirect may take the manifest's headers to
/// (docs/safety.md#redirects-and-headers).
@Suite struct RedirectRuleTests {
    @Test(arguments: [
        ("http://Example.COM/a?b", "http://example.com:80"),
        ("https://user:pw@h:8443/x", "https://h:8443"),
        ("https://h", "https://h:443"),
        ("HTTP://[::1]:81/", "http://[::1]:81"),
        ("http://[::1]/", "http://[::1]:80"),
    ])
    func originIsSchemeHostAndPort(url: String, origin: String) {
        #expect(Origin.of(url) == origin)
    }

    @Test func headersGoOnlyToTheSourcesOrigins() {
        let sources = ["http://a.example/f", "https://mirror.example/f"]
        #expect(Redirect.sendsHeaders(to: "http://a.example:80/other", sources: sources, forward: false))
        #expect(Redirect.sendsHeaders(to: "https://mirror.example/g", sources: sources, forward: false))
        // Another host, another port, another scheme: each is another origin.
        #expect(!Redirect.sendsHeaders(to: "http://cdn.example/f", sources: sources, forward: false))
        #expect(!Redirect.sendsHeaders(to: "http://a.example:8080/f", sources: sources, forward: false))
        #expect(!Redirect.sendsHeaders(to: "https://a.example/f", sources: sources, forward: false))
        #expect(Redirect.sendsHeaders(to: "http://cdn.example/f", sources: sources, forward: true))
    }

    @Test func nextHopIsHTTPAndAtMostTen() {
        #expect((try? Redirect.nextHop("https://b/x", from: "http://a/", hops: 0).get()) == "https://b/x")
        #expect((try? Redirect.nextHop("http://b/x", from: "http://a/", hops: 9).get()) == "http://b/x")
        if case .failure(let error) = Redirect.nextHop("http://b/x", from: "http://a/", hops: 10) {
            #expect(error.code == .redirect && error.message.contains("more than 10"))
        } else {
            Issue.record("an 11th redirect must fail")
        }
        if case .failure(let error) = Redirect.nextHop("file:///etc/passwd", from: "http://a/?token=s", hops: 0) {
            #expect(error.code == .redirect && error.message.contains("file:///etc/passwd"))
        } else {
            Issue.record("a redirect to file: must fail")
        }
    }
}

/// Two origins: the item's (`server`) and another one it redirects to (`other`).
@Suite struct RedirectHeaderTests {
    let server: TestServer
    let other: TestServer
    let body = TestServer.bytes(count: 600 << 10, seed: 7)

    init() throws {
        server = try TestServer()
        other = try TestServer()
    }

    /// `server` redirects `/f` to `other`'s `/f`; both serve the body there.
    func redirectAcrossOrigins() {
        var moved = TestServer.Route(body: [])
        moved.redirect = other.url("/f")
        server.set("/f", moved)
        other.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
    }

    func yaml(_ url: String, extra: String = "") -> String {
        """
        version: 1
        defaults:
          headers: {X-Api-Key: secret-key, Cookie: session=secret-cookie}
          redact: [X-Api-Key]
          connections: 3
          min_segment: 128KiB
        items:
          - url: \(url)
            dest: out.bin
            sha256: \(sha(body))
        \(extra)
        """
    }

    @Test func headersStayWithTheirOrigin() async throws {
        redirectAcrossOrigins()
        try await withTestDirectory { dir in
            let report = try await sync(yaml(server.url("/f")), in: dir)
            #expect(report.items.first?.status == .downloaded)
            let first = server.requests("/f")
            #expect(!first.isEmpty && first.allSatisfy { $0.headers["x-api-key"] == "secret-key" })
            let moved = other.requests("/f")
            #expect(moved.count >= 2)  // fanned out over ranges at the new origin
            #expect(moved.allSatisfy { $0.headers["x-api-key"] == nil && $0.headers["cookie"] == nil })
        }
    }

    @Test func forwardHeadersTakesThemAlong() async throws {
        redirectAcrossOrigins()
        try await withTestDirectory { dir in
            let report = try await sync(yaml(server.url("/f"), extra: "    forward_headers: true"), in: dir)
            #expect(report.items.first?.status == .downloaded)
            let moved = other.requests("/f")
            #expect(!moved.isEmpty && moved.allSatisfy { $0.headers["x-api-key"] == "secret-key" })
        }
    }

    @Test func forwardHeadersInDefaults() async throws {
        redirectAcrossOrigins()
        try await withTestDirectory { dir in
            let text = yaml(server.url("/f")).replacingOccurrences(of: "defaults:\n", with: "defaults:\n  forward_headers: yes\n")
            let report = try await sync(text, in: dir)
            #expect(report.items.first?.status == .downloaded)
            #expect(other.requests("/f").allSatisfy { $0.headers["x-api-key"] == "secret-key" })
        }
    }

    @Test func mirrorsGetTheHeaders() async throws {
        // The primary is gone; the mirror on another origin serves with the key.
        server.set(
            "/f",
            {
                var gone = TestServer.Route(body: [])
                gone.fault = { _ in .status(404) }
                return gone
            }())
        other.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let report = try await sync(yaml(server.url("/f"), extra: "    mirrors: [\(other.url("/f"))]"), in: dir)
            #expect(report.items.first?.status == .downloaded)
            let mirrored = other.requests("/f")
            #expect(!mirrored.isEmpty && mirrored.allSatisfy { $0.headers["x-api-key"] == "secret-key" })
        }
    }

    @Test func cliHeadersAreDroppedAcrossOriginsToo() async throws {
        redirectAcrossOrigins()
        try await withTestDirectory { dir in
            let path = write(yaml(server.url("/f")), to: "manifest.yaml", in: dir)
            let result = try await execute(["sync", path, "--header", "X-Token: cli-secret", "--progress", "none"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(server.requests("/f").allSatisfy { $0.headers["x-token"] == "cli-secret" })
            #expect(other.requests("/f").allSatisfy { $0.headers["x-token"] == nil })
        }
    }

    @Test func redirectChainsStopAfterTen() async throws {
        for hop in 0...11 {
            var route = TestServer.Route(body: [])
            route.redirect = (hop % 2 == 0 ? other : server).url("/hop\(hop + 1)")
            (hop % 2 == 0 ? server : other).set("/hop\(hop)", route)
        }
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/hop0")), in: dir)
            #expect(report.items.first?.status == .failed)
            #expect(report.items.first?.error?.code == .redirect)
            #expect(server.gets().count + other.gets().count == 11)
        }
    }

    @Test func forwardHeadersMustBeABoolean() async throws {
        await withTestDirectory { dir in
            let path = write(yaml(server.url("/f"), extra: "    forward_headers: sometimes"), to: "m.yaml", in: dir)
            #expect {
                try Manifest.load(path: path)
            } throws: { error in
                (error as? ManifestError)?.errorDescription?.contains("m.yaml:11:22: 'forward_headers' must be true or false")
                    ?? false
            }
        }
    }
}
