import Foundation
import TestServer
import Testing

@testable import JGMirror

/// The run's host table beyond one engine's items (docs/hosts.md): shared with the lists
/// a run fetches first, set per origin by `hosts:`, and deciding which source an
/// item's connections use. Against in-process servers whose logs show what reached
/// them; grace and probe delays shortened through the options.
@Suite struct RunHostsTests {
    private func origin(_ server: TestServer) -> String { "http://127.0.0.1:\(server.port)" }

    @Test func aHostFoundDownFetchingAListFailsItsSetAndCostsTheItemsNoRequest() async throws {
        let dead = try silentServer(paths: ["/rel/SHA256SUMS", "/f.bin"])
        defer { dead.stop() }
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                sets:
                  - sums: \(dead.url("/rel/SHA256SUMS"))
                    dest: rel/
                items:
                  - url: \(dead.url("/f.bin"))
                    dest: f.bin
                """
            let options = hostTestOptions(grace: 1)
            let manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            // One call: the run reads the set's list on its own engine, then its items.
            let report = try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options).run()
            let asked = dead.gets().count
            #expect(asked >= 2)
            // One host table for the run: the host the list found down is down for the
            // item too, which fails at once, without a request or a retry of its own.
            #expect(dead.gets("/f.bin").isEmpty, "\(dead.gets().map(\.path))")
            let item = report.items.first { $0.dest == "f.bin" }
            #expect(item?.status == .failed && item?.error?.code == .hostDown)
            let row = report.items.first { $0.dest == "rel/" }
            #expect(row?.status == .failed && row?.error?.code == .hostDown, "\(report.items.map(\.dest))")
            #expect(report.exitCode == .transferFailed)
            // The list's requests count in the report's hosts section, as an item's do.
            let host = report.hosts.first { $0.origin == origin(dead) }
            #expect(host?.state == "down" && (host?.requests ?? 0) >= 1 && (host?.failures ?? 0) >= 2, "\(report.hosts)")
            #expect((host?.requests ?? 0) <= asked)
        }
    }

    @Test func aChecksumsListOnADownHostFailsWithItsHostsCode() async throws {
        let dead = try silentServer(paths: ["/SHA256SUMS", "/f.bin"])
        defer { dead.stop() }
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(dead.url("/SHA256SUMS"))]
                items:
                  - url: \(dead.url("/f.bin"))
                    dest: f.bin
                """
            let report = try await sync(yaml, in: dir, options: hostTestOptions(grace: 1))
            let row = report.items.first { $0.url == dead.url("/SHA256SUMS") }
            #expect(row?.status == .failed && row?.error?.code == .hostDown)
            // The item it would have given a checksum fails for the same reason.
            #expect(report.items.first { $0.dest == "f.bin" }?.error?.code == .hostDown)
            #expect(report.hosts.first?.origin == origin(dead) && report.hosts.first?.state == "down")
        }
    }

    @Test func anOriginOfHostsHasItsOwnGrace() async throws {
        let dead = try silentServer(paths: ["/a", "/b"])
        defer { dead.stop() }
        try await withTestDirectory { dir in
            // The run's grace is 30 s; this origin's, written without its port, is 1 s.
            let yaml = """
                version: 1
                defaults:
                  host_grace: 30s
                hosts:
                  http://127.0.0.1:\(dead.port)/:
                    host_grace: 1s
                items:
                  - url: \(dead.url("/a"))
                    dest: a
                  - url: \(dead.url("/b"))
                    dest: b
                """
            let report = try await sync(yaml, in: dir, options: hostTestOptions(grace: 30))
            #expect(report.items.allSatisfy { $0.error?.code == .hostDown })
            #expect(report.items.first?.error?.message == "\(origin(dead)) is down: no answer for 1s")
        }
    }

    @Test func hostsIsReadPerOriginWithItsErrorsNamingTheirPlace() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            defaults:
              connect_timeout: 3s
            hosts:
              HTTPS://Mirror.Example.net:
                host_grace: 2m
                min_rate: 4KiB
              http://10.0.0.5:8080/:
                max_wait: 10s
                connect_timeout: 500ms
            items:
              - url: https://mirror.example.net/a
            """, name: "m.yaml")
        var grace = HostOptions()
        grace.hostGrace = 120
        grace.minRate = 4096
        var wait = HostOptions()
        wait.maxWait = 10
        wait.connectTimeout = 0.5
        #expect(manifest.originHosts == ["https://mirror.example.net:443": grace, "http://10.0.0.5:8080": wait])
        // No item is on the second origin: a slip in it would go unseen without a warning.
        #expect(
            manifest.warnings.map(\.localizedDescription) == [
                "m.yaml:8:3: no item, mirror or list of this manifest is on http://10.0.0.5:8080; its options apply only where a redirect leads there"
            ])
        let onASetAndItsMirror = try Manifest.parse(
            """
            version: 1
            hosts:
              https://m.example:
                max_wait: 1s
              http://sums.example:
                max_wait: 1s
            sets:
              - sums: http://sums.example/SHA256SUMS
                mirrors_base: [https://m.example/rel/]
            """, name: "m.yaml")
        #expect(onASetAndItsMirror.warnings.isEmpty)
        var configuration = TransferEngine.Configuration()
        configuration.apply(manifest.hosts, origins: manifest.originHosts)
        #expect(configuration.connectTimeout(for: "https://mirror.example.net/a") == 3)
        #expect(configuration.connectTimeout(for: "http://10.0.0.5:8080/x") == 0.5)
        #expect(configuration.minRate(for: "https://MIRROR.example.net:443/b") == 4096)
        #expect(configuration.minRate(for: "http://elsewhere/b") == 1024)
        #expect(configuration.hosts.grace(for: "https://mirror.example.net:443") == 120)
        #expect(configuration.hosts.maxWait(for: "http://10.0.0.5:8080") == 10)
        #expect(
            manifest.hostLines == [
                "http://10.0.0.5:8080: connect_timeout 500ms, min_rate 1.0 KiB/s, host_grace 30s, max_wait 10s",
                "https://mirror.example.net:443: connect_timeout 3s, min_rate 4.0 KiB/s, host_grace 2m, max_wait 5m",
            ])
        let origin = "a key of hosts must be an origin such as https://mirror.example.net or http://10.0.0.5:8080"
        let bad: [(String, String)] = [
            (
                "  http://h:\n    host_grase: 1s\n",
                "m.yaml:4:5: unknown key 'host_grase' in hosts 'http://h:80' (did you mean 'host_grace'?)"
            ),
            ("  http://h/a:\n    max_wait: 1s\n", "m.yaml:3:3: \(origin), without path, query or fragment: 'http://h/a'"),
            ("  ftp://h:\n    max_wait: 1s\n", "m.yaml:3:3: \(origin), not 'ftp://h'"),
            ("  http://u:p@h:\n    max_wait: 1s\n", "m.yaml:3:3: \(origin), without credentials: 'http://***@h'"),
            (
                "  http://h:\n    max_wait: 1s\n  HTTP://H:80:\n    max_wait: 2s\n",
                "m.yaml:5:3: origin http://h:80 appears twice in hosts (first at line 3)"
            ),
            ("  http://h:\n    max_wait: 25h\n", "m.yaml:4:15: 'max_wait' must be from 0s to 24h"),
            ("  http://h: 5s\n", "m.yaml:3:13: 'http://h:80' expects a mapping, found a scalar"),
            ("  - http://h\n", "m.yaml:3:3: 'hosts' expects a mapping, found a list"),
        ]
        expectManifestErrors(bad, under: "hosts")
    }

    @Test func aNewItemsConnectionsGoWhereTheRunMeasuredTheFasterHost() async throws {
        let primary = try TestServer()
        let mirror = try TestServer()
        defer {
            primary.stop()
            mirror.stop()
        }
        // One item on each host alone shows the run each host's rate: the primary at
        // 32 kB/s, the mirror at 64 MB/s.
        let small = TestServer.bytes(count: 64 << 10, seed: 1)
        var slow = TestServer.Route(body: small)
        slow.bytesPerSecond = 32_000
        primary.set("/a", slow)
        let large = TestServer.bytes(count: 8 << 20, seed: 2)
        var fast = TestServer.Route(body: large)
        fast.bytesPerSecond = 64_000_000
        mirror.set("/b", fast)
        // Then an item on both: every connection goes to the mirror.
        let body = TestServer.bytes(count: 2 << 20, seed: 3)
        primary.set("/c", TestServer.Route(body: body))
        mirror.set("/c", TestServer.Route(body: body))
        let yaml = """
            version: 1
            defaults:
              connections: 1
            items:
              - url: \(primary.url("/a"))
                dest: a
                sha256: \(sha(small))
              - url: \(mirror.url("/b"))
                dest: b
                sha256: \(sha(large))
              - url: \(primary.url("/c"))
                mirrors: [\(mirror.url("/c"))]
                dest: c
                sha256: \(sha(body))
                connections: 4
                min_segment: 256KiB
            """
        try await withTestDirectory { dir in
            var options = testOptions()
            options.jobs = 1
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.status == .downloaded })
            // Spread by turn, the item's first request and every other region would go
            // to the primary, which delivers a sixty-fourth of the mirror's rate.
            #expect(primary.gets("/c").isEmpty, "\(primary.gets("/c").count) requests to the slow primary")
            #expect(mirror.gets("/c").count >= 1)
        }
    }
}
