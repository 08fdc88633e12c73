import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `apt:` sets through the built binary (issue 44, points 1 and 3): a signed repository
/// built by Debian's tools, mirrored whole from its InRelease, changed the way an
/// archive changes, and synced again.
@Suite struct AptSetTests {
    /// A manifest of one apt set of `upstream` at `debian/`, `extra` lines added to the set.
    static func manifest(_ upstream: AptUpstream, in dir: String, extra: String = "") -> String {
        let yaml = """
            version: 1
            root: mirror
            sets:
              - apt: \(upstream.base)
                suites: [testing]
                components: [main, contrib]
                architectures: [amd64]
                keyring: \(upstream.keyring)
                dest: debian/
                sources: true
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))

            """
        return write(yaml, to: "m.yaml", in: dir)
    }

    /// `jgmirror sync` of `path` with `arguments`, its report at `dir.out/NAME.json`.
    static func sync(_ path: String, in dir: String, report name: String, _ arguments: [String] = []) async throws
        -> (Execution, [[String: Any]])
    {
        let report = outputs(beside: dir) + "/\(name).json"
        let run = try await execute(["sync", path, "--progress", "none", "--report", report] + arguments)
        let items = (try? loadReport(report))?["items"] as? [[String: Any]] ?? []
        return (run, items)
    }

    static func row(_ items: [[String: Any]], _ dest: String) -> [String: Any]? {
        items.first { $0["dest"] as? String == dest }
    }

    static func code(_ row: [String: Any]?) -> String? { (row?["error"] as? [String: Any])?["code"] as? String }

    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func aSuiteIsMirroredWholeAndEachIndexFetchedOnce() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let path = Self.manifest(upstream, in: dir)
            let (run, items) = try await Self.sync(path, in: dir, report: "first")
            #expect(run.status == 0, "\(run.stderr)")
            // Every file of the repository, pool, indexes, by-hash copies and Release
            // files, with its bytes: the mirror is the repository.
            #expect(AptUpstream.contents(of: dir + "/mirror/debian") == AptUpstream.contents(of: upstream.repo))
            // The index the set read was placed from the bytes it verified: one request.
            let packages = "/debian/dists/testing/main/binary-amd64/Packages.xz"
            #expect(upstream.server.gets(packages).count == 1)
            #expect(Self.row(items, "debian/dists/testing/InRelease")?["status"] as? String == "downloaded")
            #expect(Self.row(items, "debian/dists/testing/main/binary-amd64/Packages.xz")?["status"] as? String == "downloaded")

            // A run with nothing new asks for the Release files conditionally, and for
            // nothing else: the index read is kept with the hash Release gives it.
            let answered = upstream.server.responses().count
            let (again, second) = try await Self.sync(path, in: dir, report: "second")
            #expect(again.status == 0, "\(again.stderr)")
            #expect(second.allSatisfy { $0["status"] as? String == "unchanged" }, "\(second.map { $0["status"] ?? "" })")
            let later = upstream.server.responses().dropFirst(answered)
            #expect(later.allSatisfy { $0.status == 304 }, "\(later.map { ($0.path, $0.status) })")
            let release = ["InRelease", "Release", "Release.gpg"].map { "/debian/dists/testing/" + $0 }
            #expect(later.map(\.path).sorted() == release, "\(later.map(\.path))")
        }
    }

    /// A kept index that no longer has the bytes Release gives it, under the server's
    /// own validators (a cache rewritten with other bytes), is fetched whole, once:
    /// a conditional request would be answered `304` and give back the same copy.
    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func aKeptIndexThatDiffersFromReleaseIsFetchedWholeOnce() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let path = Self.manifest(upstream, in: dir)
            #expect(try await Self.sync(path, in: dir, report: "first").0.status == 0)
            let packages = "/debian/dists/testing/main/binary-amd64/Packages.xz"
            let url = upstream.server.url(packages)
            let cache = ListCache(root: dir + "/mirror")
            let kept = try #require(cache.load(url))
            let other = try #require(cache.load(upstream.server.url("/debian/dists/testing/contrib/binary-amd64/Packages.xz")))
            #expect(cache.store(CachedList(url: url, validators: kept.validators, body: other.body)) == nil)
            let asked = upstream.server.gets(packages).count
            let (again, _) = try await Self.sync(path, in: dir, report: "second")
            #expect(again.status == 0, "\(again.stderr)")
            let later = upstream.server.gets(packages).dropFirst(asked)
            #expect(later.count == 1 && later.allSatisfy { $0.headers["if-none-match"] == nil }, "\(later)")
            #expect(AptUpstream.contents(of: dir + "/mirror/debian") == AptUpstream.contents(of: upstream.repo))
        }
    }

    /// A suite's Release files are asked together, and so are its indexes: each is a
    /// round trip, and one after another they added up (7 round trips before the first
    /// pool file for one suite of two components).
    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func aSuitesFilesAreAskedTogether() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let suite = "/debian/dists/testing/"
            let indexes = ["main/binary-amd64/Packages.xz", "contrib/binary-amd64/Packages.xz", "main/source/Sources.xz"]
            let waits = [
                "InRelease": ["Release", "Release.gpg"], "Release": ["InRelease", "Release.gpg"],
                indexes[0]: Array(indexes.dropFirst()), indexes[1]: [indexes[0], indexes[2]],
            ]
            for (path, others) in waits {
                let data = try #require(FileManager.default.contents(atPath: upstream.repo + "/dists/testing/" + path))
                var route = TestServer.Route(body: [UInt8](data), etag: "\"\(sha([UInt8](data)))\"")
                route.answeredOnceAsked = others.map { suite + $0 }
                upstream.server.set(suite + path, route)
            }
            let (run, _) = try await Self.sync(Self.manifest(upstream, in: dir), in: dir, report: "first")
            #expect(run.status == 0, "\(run.stderr)")
        }
    }

    /// A new generation: new versions, a package removed, a package added, a later
    /// Release. The removed package's files and the previous indexes' by-hash copies
    /// stay a day (`keep_removed`'s default for apt sets) under `--delete`.
    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func theNextGenerationReplacesTheIndexesAndKeepsRemovedFilesADay() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let path = Self.manifest(upstream, in: dir)
            #expect(try await Self.sync(path, in: dir, report: "first", ["--delete"]).0.status == 0)
            let first = AptUpstream.contents(of: dir + "/mirror/debian")
            try await upstream.change("next")
            let (run, items) = try await Self.sync(path, in: dir, report: "next", ["--delete"])
            #expect(run.status == 0, "\(run.stderr)")
            let now = AptUpstream.contents(of: dir + "/mirror/debian")
            let repository = AptUpstream.contents(of: upstream.repo)
            #expect(repository.allSatisfy { now[$0.key] == $0.value }, "every file of the new generation is in place")
            let removed = Set(first.keys).subtracting(repository.keys)
            #expect(!removed.isEmpty && removed.allSatisfy { now[$0] == first[$0] }, "\(removed)")
            // Kept: the removed package's files, and the by-hash copies of the previous
            // indexes (which the archive keeps too), each as it was.
            let kept = items.filter { $0["status"] as? String == "kept_removed" }.compactMap { $0["dest"] as? String }
            #expect(Set(removed.map { "debian/" + $0 }).isSubset(of: kept), "\(kept)")
            #expect(kept.allSatisfy { first[String($0.dropFirst(7))] != nil && exists(dir + "/mirror/" + $0) })
            #expect(kept.contains { $0.hasPrefix("debian/pool/") } && kept.contains { $0.contains("/by-hash/") })
        }
    }

    /// A form Release lists that the server does not serve (Debian lists a plain
    /// Packages it serves only compressed) is `not_served`, with its by-hash copy.
    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
    func aListedFormTheServerLacksIsNoFailure() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let plain = "dists/testing/main/binary-amd64/Packages"
            let release = try AptRelease(
                parsing: [UInt8](try Data(contentsOf: URL(fileURLWithPath: upstream.repo + "/dists/testing/Release"))),
                file: "Release")
            let byHash = try #require(release.file("main/binary-amd64/Packages")).byHashPath
            upstream.withdraw(plain)
            upstream.withdraw("dists/testing/" + byHash)
            let (run, items) = try await Self.sync(Self.manifest(upstream, in: dir), in: dir, report: "r")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(Self.row(items, "debian/" + plain)?["status"] as? String == "not_served")
            #expect(Self.row(items, "debian/dists/testing/" + byHash)?["status"] as? String == "not_served")
            #expect(!exists(dir + "/mirror/debian/" + plain))
            #expect(exists(dir + "/mirror/debian/dists/testing/InRelease"))
        }
    }

    /// Under `--publish snapshot`, and in a set's own snapshots, the suite is published
    /// whole, and the Release held is the one readers are served.
    @Test(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason), arguments: ["tree", "set"])
    func snapshotsPublishASuiteAndHoldItsRelease(mode: String) async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let path = Self.manifest(upstream, in: dir, extra: mode == "set" ? "publish: snapshot" : "")
            let arguments = mode == "tree" ? ["--publish", "snapshot"] : []
            let served = dir + (mode == "tree" ? "/mirror/current/debian" : "/mirror/debian")
            #expect(try await Self.sync(path, in: dir, report: "first", arguments).0.status == 0)
            #expect(AptUpstream.contents(of: served) == AptUpstream.contents(of: upstream.repo))
            try await upstream.change("next")
            #expect(try await Self.sync(path, in: dir, report: "next", arguments).0.status == 0)
            let published = AptUpstream.contents(of: served)
            #expect(AptUpstream.contents(of: upstream.repo).allSatisfy { published[$0.key] == $0.value })
            // The state database lost: the Release readers are served still decides.
            try FileManager.default.removeItem(atPath: dir + "/mirror/.jgmirror/state.sqlite")
            try await upstream.change("replay")
            let (replayed, items) = try await Self.sync(path, in: dir, report: "replay", arguments)
            #expect(replayed.status == 3, "\(replayed.stderr)")
            #expect(Self.code(Self.row(items, "debian/dists/testing/")) == "stale_release", "\(items.count) rows")
            #expect(AptUpstream.contents(of: served) == published)
        }
    }
}
