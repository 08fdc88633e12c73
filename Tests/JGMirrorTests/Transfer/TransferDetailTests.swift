import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Transfer details a whole run depends on: a length no file system holds, bodies
/// of unknown length sharing the free space, no secret in a file name or resume
/// state, case collisions among listed names.
@Suite struct TransferDetailTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    // MARK: A length no file system holds

    func serveHugeAnnouncement() {
        var route = TestServer.Route(body: TestServer.bytes(count: 64 << 10, seed: 43), etag: "\"h\"")
        route.announcedLength = 1_000_000_000_000_000
        server.set("/huge", route)
    }

    @Test func aLengthPastTheWholeFileSystemIsTheServersFault() async throws {
        serveHugeAnnouncement()
        try await withTestDirectory { dir in
            var options = testOptions()
            options.engine.freeSpace = { _ in SpaceGuard.FreeSpace(available: 5 << 30, total: 10 << 30) }
            let report = try await sync(manifest(url: server.url("/huge")), in: dir, options: options)
            let item = try #require(report.items.first)
            #expect(item.error?.code == .tooLarge, "\(String(describing: item.error))")
            #expect(item.error?.message.contains("announced 1000000000000000 bytes") == true, "\(String(describing: item.error))")
            #expect(item.error?.message.contains("more than the file system holds") == true)
            #expect(report.exitCode == .transferFailed)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    @Test func theBinaryFailsAHugeAnnouncementWithExit1() async throws {
        serveHugeAnnouncement()
        try await withTestDirectory { dir in
            let path = write(manifest(url: server.url("/huge")), to: "m.yaml", in: dir)
            let run = try await execute([
                "sync", path, "--root", dir + "/mirror", "--progress", "none", "--report", dir + "/r.json",
            ])
            #expect(run.status == 1, "\(run.stderr)")
            let items = try #require(try loadReport(dir + "/r.json")["items"] as? [[String: Any]])
            let error = items.first?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "too_large", "\(String(describing: error))")
        }
    }

    // MARK: Bodies of unknown length share the free space

    @Test func twoGuardsNeverGrantTheSameFreeBytes() {
        // 12 MiB above the reserve; what is written is gone from `available`.
        let written = Locked<Int64>(0)
        let total: Int64 = 1 << 30
        let reserve = SpaceGuard.defaultReserve(total: total)
        let probe: SpaceGuard.Probe = { _ in
            SpaceGuard.FreeSpace(available: reserve + (12 << 20) - written.withLock { $0 }, total: total)
        }
        let ledger = SpaceGuard.Ledger()
        var guards = [
            SpaceGuard(minFree: nil, probe: probe, ledger: ledger), SpaceGuard(minFree: nil, probe: probe, ledger: ledger),
        ]
        var refused = [false, false]
        // Both bodies write 64 KiB at a time, in turns, until each is refused.
        while refused.contains(false) {
            for index in guards.indices where !refused[index] {
                if guards[index].admit(64 << 10, fd: -1, path: "p\(index)") == nil {
                    written.withLock { $0 += 64 << 10 }
                } else {
                    refused[index] = true
                }
            }
        }
        #expect(written.withLock { $0 } <= 12 << 20, "\(written.withLock { $0 }) bytes written into 12 MiB")
        #expect(written.withLock { $0 } > 10 << 20)
        for index in guards.indices { guards[index].release() }
        #expect(ledger.held == 0)
    }

    @Test func twoBodiesOfUnknownLengthStayAboveTheDefaultReserve() async throws {
        // Two close-delimited bodies, throttled so that both are in flight together.
        for path in ["/u1", "/u2"] {
            var route = TestServer.Route(body: TestServer.bytes(count: 32 << 20, seed: 44))
            route.noLength = true
            route.bytesPerSecond = 24 << 20
            server.set(path, route)
        }
        try await withTestDirectory { dir in
            let total: Int64 = 1 << 30
            let room: Int64 = 12 << 20
            let mirror = dir + "/mirror"
            var options = testOptions()
            // What the part files of both downloads ever held is gone from the disk (a
            // failed one's space is not given back), so together they may write `room`.
            let largest = Locked<[String: Int64]>([:])
            options.engine.freeSpace = { _ in
                let parts = (try? FileManager.default.contentsOfDirectory(atPath: mirror)) ?? []
                let used = largest.withLock { largest -> Int64 in
                    for name in parts where name.hasSuffix(".jgpart") {
                        let size = (try? FileManager.default.attributesOfItem(atPath: mirror + "/" + name)[.size] as? Int64) ?? 0
                        largest[name] = max(largest[name] ?? 0, size)
                    }
                    return largest.values.reduce(0, +)
                }
                return SpaceGuard.FreeSpace(available: SpaceGuard.defaultReserve(total: total) + room - used, total: total)
            }
            let yaml = """
                version: 1
                defaults: {connections: 1}
                items:
                  - {url: \(server.url("/u1")), dest: one.bin}
                  - {url: \(server.url("/u2")), dest: two.bin}
                """
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.error?.code == .diskFull }, "\(report.items.map { $0.error })")
            let written = report.items.reduce(Int64(0)) { $0 + $1.bytesDownloaded }
            #expect(written <= room, "\(written) bytes written into \(room)")
        }
    }

    // MARK: No secret in a file name or resume state

    @Test func resumeStateHoldsNoDigestOfCredentialsOrRedactedQueryValues() async throws {
        let body = TestServer.bytes(count: 4 << 20, seed: 45)
        var route = TestServer.Route(body: body, etag: "\"s\"")
        // 1 MiB, then a failure without progress: with no retries the item stops, its state kept.
        route.fault = { index in index == 0 ? .drop(afterBytes: 1 << 20) : .status(500) }
        server.set("/s", route)
        try await withTestDirectory { dir in
            let secretURL = server.url("/s?token=TOPSECRET&part=1").replacingOccurrences(of: "http://", with: "http://user:pw@")
            let extra = "connections: 1\nretries: 0\nredact: [token]"
            let failed = try await sync(manifest(url: secretURL, sha256: sha(body), extra: extra), in: dir)
            #expect(failed.items.first?.status == .failed)
            let text = try String(contentsOfFile: dir + "/mirror/out.bin.jgd", encoding: .utf8)
            #expect(!text.contains("TOPSECRET") && !text.contains("pw@"), "\(text)")
            for derived in [
                secretURL, Redactor.redactURL(secretURL),
                Redactor.redactURL(secretURL).replacingOccurrences(of: "***@", with: ""),
            ] {
                #expect(!text.contains(sha(Array(derived.utf8))), "a digest of \(derived)")
            }
            // Another token and password is the same file: the next run resumes.
            server.update("/s") { $0.fault = { _ in nil } }
            let rotated = secretURL.replacingOccurrences(of: "TOPSECRET", with: "NEWSECRET").replacingOccurrences(
                of: ":pw@", with: ":pw2@")
            let resumed = try await sync(manifest(url: rotated, sha256: sha(body), extra: extra), in: dir)
            #expect(resumed.items.first?.status == .downloaded, "\(String(describing: resumed.items.first?.error))")
            #expect((resumed.items.first?.resumedFrom ?? 0) > 0)
        }
    }

    @Test(arguments: [true, false])
    func aListsCacheNameHoldsNoDigestOfItsCredentialsOrRedactedQueryValues(isSet: Bool) async throws {
        let file = TestServer.bytes(count: 5000, seed: 46)
        server.set("/rel/a.iso", TestServer.Route(body: file))
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array((sha(file) + "  a.iso\n").utf8), etag: "\"l\""))
        try await withTestDirectory { dir in
            let sums = server.url("/rel/SHA256SUMS?token=LISTTOKEN&v=2")
                .replacingOccurrences(of: "http://", with: "http://user:pw@")
            // A set's list, or a `checksums:` list giving an item its hash.
            let lists =
                isSet
                ? "sets:\n  - sums: \(sums)\n"
                : "checksums:\n  - url: \(sums)\nitems:\n  - {url: \(server.url("/rel/a.iso")), dest: a.iso}\n"
            let yaml = "version: 1\nroot: mirror\ndefaults: {redact: [token]}\n" + lists
            let path = write(yaml, to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            let names = try FileManager.default.contentsOfDirectory(atPath: dir + "/mirror/.jgmirror/lists")
            let masked = Redactor(redact: ["token"]).redact(url: sums)
            #expect(masked.hasSuffix("?token=***&v=2") && masked.contains("//***@"), "\(masked)")
            #expect(names == [sha(Array(masked.utf8))], "\(names)")
            for derived in [sums, Redactor.redactURL(sums)] {
                #expect(!names.contains(sha(Array(derived.utf8))), "a digest of \(derived)")
            }
        }
    }

    // MARK: Case collisions among listed names

    @Test func listedNamesDifferingOnlyInCaseFollowTheManifestsRule() async throws {
        let file = TestServer.bytes(count: 5000, seed: 47)
        server.set("/rel/a.iso", TestServer.Route(body: file))
        server.set("/rel/A.ISO", TestServer.Route(body: file))
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array((sha(file) + "  a.iso\n" + sha(file) + "  A.ISO\n").utf8)))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nroot: mirror\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: rel/\n", to: "m.yaml",
                in: dir)
            let plain = try await execute(["plan", path])
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(
                plain.stderr.contains(
                    "warning: \(path):4:11: \(server.url("/rel/SHA256SUMS")) line 2: destination 'rel/A.ISO' and 'rel/a.iso' (line 1) are the same file"
                ),
                "\(plain.stderr)")
            // With --portable-names the list cannot be mirrored as it is: its set fails
            // (exit 1), as for any other listed name the tree cannot take.
            let strict = try await execute(["plan", path, "--portable-names"])
            #expect(strict.status == 1, "\(strict.stderr)")
            #expect(strict.stderr.contains("rel/: \(server.url("/rel/SHA256SUMS")) line 2: "), "\(strict.stderr)")
            #expect(strict.stderr.contains("'rel/A.ISO' and 'rel/a.iso'"), "\(strict.stderr)")
        }
        // A listed name that differs only in case from one of the manifest's own items.
        var expansion = SetExpansion(
            file: "m.yaml", items: try Manifest.parse("version: 1\nitems:\n  - {url: http://h/x, dest: d/Read.me}\n").itemChunks,
            portableNames: true)
        let set = ManifestSet(
            sums: "http://h/SUMS", dest: "d/", location: SourceLocation(line: 5, column: 3),
            sumsLocation: SourceLocation(line: 5, column: 11))
        let list = try SumsList(parsing: String(repeating: "a", count: 64) + "  READ.ME\n", lenient: false)
        let sums = try #require(set.catalog as? SumsCatalog)
        #expect(throws: ManifestError.self) { try sums.items(of: set, list: list, claims: &expansion) }
    }
}
