import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A group's files are placed phase by phase: an item of a later phase is fetched and
/// verified with the others, and its bytes wait for the phases before it; a file that
/// does not reach its place keeps every later phase's previous copy
/// (docs/publishing.md#published-lists).
@Suite struct PublishGroupTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// Syncs `pool` (phase 0) and `index` (phase 1, an item), then `Release` (phase 2,
    /// bytes) and `by-hash` (a link to the index), into `dir/mirror`.
    private func sync(pool: [UInt8], index: [UInt8], release: String, in dir: String) async throws -> RunReport {
        let yaml = """
            version: 1
            items:
              - {url: \(server.url("/pool.deb")), dest: pool/a.deb, sha256: \(sha(pool))}
              - {url: \(server.url("/Packages")), dest: dists/s/Packages, sha256: \(sha(index))}

            """
        var planOptions = PlanOptions()
        planOptions.root = dir + "/mirror"
        var plan = Plan(manifest: try Manifest.load(path: write(yaml, to: "m.yaml", in: dir)), options: planOptions)
        plan.manifest.publishGroups = [
            PublishGroup(
                folder: "", name: "the suite s",
                phases: [
                    [PublishedFile(dest: "pool/a.deb", source: .item, url: "")],
                    [
                        PublishedFile(dest: "dists/s/Packages", source: .item, url: ""),
                        PublishedFile(dest: "dists/s/by-hash/\(sha(index))", source: .sameAs("dists/s/Packages"), url: ""),
                    ],
                    [PublishedFile(dest: "dists/s/Release", source: .bytes(Data(release.utf8)), url: "http://h/Release")],
                ])
        ]
        return try await SyncSession(plan: plan, options: testOptions()).run()
    }

    private func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test func eachPhaseIsPlacedOnceTheOnesBeforeItAreInPlace() async throws {
        let (pool, index) = (Array("pool v1".utf8), Array("index v1".utf8))
        server.set("/pool.deb", TestServer.Route(body: pool))
        server.set("/Packages", TestServer.Route(body: index))
        try await withTestDirectory { dir in
            let report = try await sync(pool: pool, index: index, release: "release v1", in: dir)
            #expect(report.exitCode == .success, "\(report.items.map { ($0.dest, $0.status, $0.error?.message) })")
            #expect(text(dir + "/mirror/dists/s/Packages") == "index v1")
            #expect(text(dir + "/mirror/dists/s/by-hash/\(sha(index))") == "index v1")
            #expect(text(dir + "/mirror/dists/s/Release") == "release v1")
            // Release, the last phase, is the newest file: placed after the index.
            let modified = { (path: String) in
                (try? FileManager.default.attributesOfItem(atPath: dir + "/mirror/" + path)[.modificationDate] as? Date)
                    ?? .distantPast
            }
            #expect(modified("dists/s/Release") >= modified("dists/s/Packages"))
        }
    }

    @Test func aPoolFileThatFailsKeepsThePreviousIndexAndRelease() async throws {
        let (pool, index) = (Array("pool v1".utf8), Array("index v1".utf8))
        server.set("/pool.deb", TestServer.Route(body: pool))
        server.set("/Packages", TestServer.Route(body: index))
        try await withTestDirectory { dir in
            #expect(try await sync(pool: pool, index: index, release: "release v1", in: dir).exitCode == .success)
            // The next release: its pool file is missing upstream.
            let (pool2, index2) = (Array("pool v2".utf8), Array("index v2".utf8))
            var gone = TestServer.Route(body: [])
            gone.fault = { _ in .status(404) }
            server.set("/pool.deb", gone)
            server.set("/Packages", TestServer.Route(body: index2))
            let report = try await sync(pool: pool2, index: index2, release: "release v2", in: dir)
            #expect(report.exitCode == .transferFailed)
            // The new index was fetched and verified, and dropped: the old one stays.
            #expect(text(dir + "/mirror/dists/s/Packages") == "index v1")
            #expect(text(dir + "/mirror/dists/s/Release") == "release v1")
            #expect(!exists(dir + "/mirror/dists/s/Packages.jgpart"))
            let status = { (dest: String) in report.items.first { $0.dest == dest }?.status }
            #expect(status("pool/a.deb") == .failed)
            #expect(status("dists/s/Packages") == .skipped && status("dists/s/Release") == .skipped)
            #expect(report.items.first { $0.dest == "dists/s/Release" }?.note?.contains("pool/a.deb") == true)
        }
    }

    /// A form of an index the server does not serve (Debian lists a plain `Packages` it
    /// does not serve) is `not_served`, with its by-hash copy: no failure, and the
    /// phases after it are placed.
    @Test func anOptionalFileTheServerLacksHoldsNothingBack() async throws {
        let (pool, index, plain) = (Array("pool v1".utf8), Array("index v1".utf8), Array("plain index".utf8))
        server.set("/pool.deb", TestServer.Route(body: pool))
        server.set("/Packages.xz", TestServer.Route(body: index))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/pool.deb")), dest: pool/a.deb, sha256: \(sha(pool))}
                  - {url: \(server.url("/Packages.xz")), dest: dists/s/Packages.xz, sha256: \(sha(index))}
                  - {url: \(server.url("/Packages")), dest: dists/s/Packages, sha256: \(sha(plain))}

                """
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            var plan = Plan(manifest: try Manifest.load(path: write(yaml, to: "m.yaml", in: dir)), options: planOptions)
            plan.manifest.publishGroups = [
                PublishGroup(
                    folder: "", name: "the suite s",
                    phases: [
                        [PublishedFile(dest: "pool/a.deb", source: .item, url: "")],
                        [
                            PublishedFile(dest: "dists/s/Packages.xz", source: .item, url: "", optional: true),
                            PublishedFile(dest: "dists/s/Packages", source: .item, url: "", optional: true),
                            PublishedFile(
                                dest: "dists/s/by-hash/\(sha(plain))", source: .sameAs("dists/s/Packages"), url: "",
                                optional: true),
                        ],
                        [PublishedFile(dest: "dists/s/Release", source: .bytes(Data("release".utf8)), url: "http://h/R")],
                    ])
            ]
            let report = try await SyncSession(plan: plan, options: testOptions()).run()
            let status = { (dest: String) in report.items.first { $0.dest == dest }?.status }
            #expect(report.exitCode == .success, "\(report.items.map { ($0.dest, $0.status, $0.error?.message) })")
            #expect(status("dists/s/Packages") == .notServed && status("dists/s/by-hash/\(sha(plain))") == .notServed)
            #expect(status("dists/s/Packages.xz") == .downloaded && status("dists/s/Release") == .downloaded)
            #expect(report.totals.notServed == 2)
            #expect(!exists(dir + "/mirror/dists/s/Packages") && !exists(dir + "/mirror/dists/s/by-hash/\(sha(plain))"))
            #expect(text(dir + "/mirror/dists/s/Release") == "release")
        }
    }

    /// An index of a phase that fails holds back the whole phase, the indexes that
    /// verified too: their previous copies stay beside the previous Release.
    @Test func anIndexThatFailsHoldsBackEveryIndexOfItsPhase() async throws {
        let (pool, first, second) = (Array("pool v1".utf8), Array("packages v1".utf8), Array("sources v1".utf8))
        server.set("/pool.deb", TestServer.Route(body: pool))
        server.set("/Packages", TestServer.Route(body: first))
        server.set("/Sources", TestServer.Route(body: second))
        try await withTestDirectory { dir in
            func sync(_ packages: [UInt8], _ sources: [UInt8], release: String) async throws -> RunReport {
                let yaml = """
                    version: 1
                    items:
                      - {url: \(server.url("/pool.deb")), dest: pool/a.deb, sha256: \(sha(pool))}
                      - {url: \(server.url("/Packages")), dest: dists/s/Packages, sha256: \(sha(packages))}
                      - {url: \(server.url("/Sources")), dest: dists/s/Sources, sha256: \(sha(sources))}

                    """
                var planOptions = PlanOptions()
                planOptions.root = dir + "/mirror"
                var plan = Plan(manifest: try Manifest.load(path: write(yaml, to: "m.yaml", in: dir)), options: planOptions)
                plan.manifest.publishGroups = [
                    PublishGroup(
                        folder: "", name: "the suite s",
                        phases: [
                            [PublishedFile(dest: "pool/a.deb", source: .item, url: "")],
                            [
                                PublishedFile(dest: "dists/s/Packages", source: .item, url: ""),
                                PublishedFile(dest: "dists/s/Sources", source: .item, url: ""),
                            ],
                            [PublishedFile(dest: "dists/s/Release", source: .bytes(Data(release.utf8)), url: "http://h/R")],
                        ])
                ]
                return try await SyncSession(plan: plan, options: testOptions()).run()
            }
            #expect(try await sync(first, second, release: "release v1").exitCode == .success)
            // The next release: its Packages is there, its Sources is not.
            let next = Array("packages v2".utf8)
            server.set("/Packages", TestServer.Route(body: next))
            var gone = TestServer.Route(body: [])
            gone.fault = { _ in .status(404) }
            server.set("/Sources", gone)
            let report = try await sync(next, Array("sources v2".utf8), release: "release v2")
            #expect(report.exitCode == .transferFailed)
            #expect(text(dir + "/mirror/dists/s/Packages") == "packages v1", "the verified index waits with its phase")
            #expect(text(dir + "/mirror/dists/s/Release") == "release v1")
            #expect(report.items.first { $0.dest == "dists/s/Packages" }?.status == .skipped)
        }
    }
}
