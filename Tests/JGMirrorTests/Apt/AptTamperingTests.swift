import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Tampering and failure upstream, through the built binary (issue 44, point 4): in
/// each case the run exits with the failure's code and nothing new is visible to apt —
/// the suite's previous indexes stay in place, byte for byte, and every file they name
/// is there with the bytes they promise.
@Suite(.enabled(if: AptUpstream.toolsInstalled, AptUpstream.skipReason))
struct AptTamperingTests {
    /// A repository mirrored once, then changed to its next generation by `fault`, then
    /// synced: the run's exit code and report rows, with `dists/` checked to be as it
    /// was and to hold.
    private func afterFault(
        _ fault: (AptUpstream) async throws -> Void, in dir: String, arguments: [String] = []
    ) async throws -> (Execution, [[String: Any]]) {
        let upstream = try await AptUpstream(in: dir)
        let path = AptSetTests.manifest(upstream, in: dir)
        #expect(try await AptSetTests.sync(path, in: dir, report: "first", arguments).0.status == 0)
        let before = AptUpstream.contents(of: dir + "/mirror/debian/dists")
        try await fault(upstream)
        let result = try await AptSetTests.sync(path, in: dir, report: "fault", arguments)
        #expect(AptUpstream.contents(of: dir + "/mirror/debian/dists") == before, "the previous indexes stay")
        try Self.expectIndexesHold(dir + "/mirror/debian")
        return result
    }

    /// Every pool file the mirror's Packages and Sources name is in place with the size
    /// and SHA-256 they give: an apt client of the mirror fails on none.
    static func expectIndexesHold(_ mirror: String, suite: String = "testing") throws {
        let dists = mirror + "/dists/" + suite + "/"
        let signed = try ClearsignedMessage(parsing: [UInt8](try Data(contentsOf: URL(fileURLWithPath: dists + "InRelease"))))
        let release = try AptRelease(parsing: signed.text, file: "InRelease")
        let plan = try AptSelection(components: ["main", "contrib"], architectures: ["amd64"], sources: true).plan(
            release, file: "InRelease")
        for index in plan.files {
            #expect(
                fileSHA(dists + index.file.path) == index.file.sha256 || !exists(dists + index.file.path), "\(index.file.path)")
        }
        for (readable, sources) in plan.packages.map({ ($0, false) }) + plan.sources.map({ ($0, true) }) {
            let form = try #require(readable.forms.first { exists(dists + $0.file.path) })
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dists + form.file.path)))
            let text = try readable.read(bytes, format: form.format, name: form.file.path)
            let files = sources ? try AptPoolFile.sources(text, file: "S") : try AptPoolFile.packages(text, file: "P")
            for file in files { #expect(fileSHA(mirror + "/" + file.path) == file.sha256, "\(file.path)") }
        }
    }

    @Test func aDebWhoseBytesDifferFromPackagesIsQuarantined() async throws {
        try await withTestDirectory { dir in
            let (run, items) = try await afterFault(
                { upstream in
                    try await upstream.change("next")
                    try await upstream.change("tamper", ["jgtest007"])
                }, in: dir)
            #expect(run.status == 3, "\(run.stderr)")
            let dest = "debian/pool/main/j/jgtest007/jgtest007_1.2_amd64.deb"
            #expect(AptSetTests.code(AptSetTests.row(items, dest)) == "checksum_mismatch")
            #expect(!exists(dir + "/mirror/" + dest), "never in the served tree")
            #expect(exists(dir + "/mirror/.jgmirror/quarantine/" + dest), "kept aside under .jgmirror")
            #expect(AptSetTests.row(items, "debian/dists/testing/InRelease")?["status"] as? String == "skipped")
        }
    }

    @Test func anInReleaseSignedByAnotherKeyIsRefused() async throws {
        try await withTestDirectory { dir in
            let (run, items) = try await afterFault(
                { upstream in
                    try await upstream.change("next")
                    try await upstream.change("other-key")
                }, in: dir)
            #expect(run.status == 3, "\(run.stderr)")
            #expect(AptSetTests.code(AptSetTests.row(items, "debian/dists/testing/")) == "signature")
            #expect(!items.contains { ($0["dest"] as? String)?.hasPrefix("debian/pool/") == true }, "nothing of it is fetched")
        }
    }

    @Test func aPackagesWhoseHashDiffersFromReleaseIsRefused() async throws {
        try await withTestDirectory { dir in
            let (run, items) = try await afterFault(
                { upstream in
                    try await upstream.change("next")
                    try await upstream.change("tamper-index")
                }, in: dir)
            #expect(run.status == 3, "\(run.stderr)")
            let row = AptSetTests.row(items, "debian/dists/testing/")
            #expect(AptSetTests.code(row) == "checksum_mismatch", "\(String(describing: row))")
        }
    }

    /// A replayed Release, in order and under `--publish snapshot`.
    @Test(arguments: [[], ["--publish", "snapshot"]])
    func aReplayedOlderReleaseIsRefused(arguments: [String]) async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir)
            let path = AptSetTests.manifest(upstream, in: dir)
            let served = dir + (arguments.isEmpty ? "/mirror/debian" : "/mirror/current/debian")
            #expect(try await AptSetTests.sync(path, in: dir, report: "first", arguments).0.status == 0)
            try await upstream.change("next")
            #expect(try await AptSetTests.sync(path, in: dir, report: "next", arguments).0.status == 0)
            let before = AptUpstream.contents(of: served + "/dists")
            try await upstream.change("replay")
            let (run, items) = try await AptSetTests.sync(path, in: dir, report: "replay", arguments)
            #expect(run.status == 3, "\(run.stderr)")
            #expect(AptSetTests.code(AptSetTests.row(items, "debian/dists/testing/")) == "stale_release")
            #expect(run.stderr.contains("replay"), "\(run.stderr)")
            #expect(AptUpstream.contents(of: served + "/dists") == before)
            try Self.expectIndexesHold(served)
        }
    }

    @Test func aPoolFileTheServerLacksFailsTheRunAndHoldsBackTheIndexes() async throws {
        try await withTestDirectory { dir in
            let gone = "pool/main/j/jgtest007/jgtest007_1.2_amd64.deb"
            let (run, items) = try await afterFault(
                { upstream in
                    try await upstream.change("next")
                    upstream.withdraw(gone)
                }, in: dir)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(AptSetTests.code(AptSetTests.row(items, "debian/" + gone)) == "http_404")
            let held = AptSetTests.row(items, "debian/dists/testing/InRelease")
            #expect(held?["status"] as? String == "skipped" && (held?["note"] as? String)?.contains(gone) == true)
        }
    }

    /// A Release past its `Valid-Until` is refused before anything of its suite is fetched.
    @Test func anExpiredReleaseIsRefused() async throws {
        try await withTestDirectory { dir in
            let upstream = try await AptUpstream(in: dir, ["--packages", "2", "--size", "1", "--valid-for", "-60"])
            let (run, items) = try await AptSetTests.sync(AptSetTests.manifest(upstream, in: dir), in: dir, report: "r")
            #expect(run.status == 3, "\(run.stderr)")
            let row = AptSetTests.row(items, "debian/dists/testing/")
            #expect(AptSetTests.code(row) == "stale_release")
            let message = (row?["error"] as? [String: Any])?["message"] as? String
            #expect(message?.contains("was valid until") == true, "\(message ?? "")")
            #expect(items.count == 1 && !exists(dir + "/mirror/debian/dists"))
        }
    }
}
