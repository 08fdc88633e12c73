import Foundation
import TestServer
import Testing

@testable import JGMirror

extension PublishingTests {
    /// Acceptance (issue 33), snapshot variant: a new release replaces `b.img` and adds
    /// `c.iso`, whose download is held while a reader reads `current` in a loop. Built
    /// as a snapshot, every list the reader sees names files with the listed bytes.
    /// Published in order, the replaced `b.img` lands before its list, and the reader
    /// meets the old list beside the new file: the check itself works.
    ///
    /// `set` is the set's own snapshots (`publish: snapshot` on the set): `rel` is the link.
    @Test(arguments: ["snapshot", "set", "ordered"])
    func aReaderOfASnapshotSeesTheOldReleaseOrTheNew(mode: String) async throws {
        serveSums(sums(["a.iso", "b.img"]))
        try await withTestDirectory { dir in
            var options = testOptions()
            options.publish = mode == "snapshot" ? .snapshot : nil
            let published =
                mode == "set"
                ? publishedSet().replacingOccurrences(of: "publish: true", with: "publish: snapshot") : publishedSet()
            #expect(try await syncSets(published, in: dir, options: options).exitCode == .success)
            #expect((Symlink.target(dir + "/mirror/rel") != nil) == (mode == "set"))
            let served = dir + "/mirror" + (mode == "snapshot" ? "/current/rel" : "/rel")
            #expect(contents(served + "/SHA256SUMS") == Array(sums(["a.iso", "b.img"]).utf8))

            let replaced = TestServer.bytes(count: 31_111, seed: 77)
            server.set("/rel/b.img", TestServer.Route(body: replaced))
            let list = [sha(files["a.iso"]!) + "  a.iso", sha(replaced) + "  b.img", sha(files["c.iso"]!) + "  c.iso"]
            serveSums(list.joined(separator: "\n") + "\n")

            let (report, violations) = try await syncWhileReading(
                published, in: dir, options: options, reader: TreeReader(folder: served), others: ["rel/a.iso", "rel/b.img"])
            #expect(report.exitCode == .success, "\(report.warnings)")
            #expect(contents(served + "/b.img") == replaced)
            if mode != "ordered" {
                #expect(violations.isEmpty, "\(violations.prefix(3))")
                #expect(contents(served + "/SHA256SUMS") == Array((list.joined(separator: "\n") + "\n").utf8))
            } else {
                #expect(violations.contains { $0.contains("b.img does not have the listed hash") })
            }
        }
    }
}

extension PublishingTests {
    /// `--backup-dir` keeps a published list the run replaces, as it keeps a replaced file.
    @Test func aReplacedPublishedListIsKeptInTheBackup() async throws {
        let first = sums(["a.iso"])
        serveSums(first)
        try await withTestDirectory { dir in
            #expect(try await syncSets(publishedSet(), in: dir).exitCode == .success)
            serveSums(sums(["a.iso", "b.img"]))
            var options = testOptions()
            options.backupDir = dir + "/backup"
            #expect(try await syncSets(publishedSet(), in: dir, options: options).exitCode == .success)
            let runs = try FileManager.default.contentsOfDirectory(atPath: dir + "/backup")
            #expect(runs.count == 1)
            #expect(contents(dir + "/backup/" + (runs.first ?? "") + "/rel/SHA256SUMS") == Array(first.utf8))
            #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(sums(["a.iso", "b.img"]).utf8))
        }
    }
}

/// Snapshot publishing (`--publish snapshot`, docs/publishing.md#snapshot): `current` moves only
/// after a clean run, to a complete snapshot; old snapshots are pruned; unchanged files are
/// hard links that the next run trusts without reading them.
@Suite struct SnapshotPublishingTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// Three files; `f1.bin` has the bytes of `version`.
    func bodies(version: Int) -> [String: [UInt8]] {
        [
            "f0.bin": TestServer.bytes(count: 20_000, seed: 1),
            "f1.bin": TestServer.bytes(count: 20_000 + version, seed: UInt64(100 + version)),
            "sub/f2.bin": TestServer.bytes(count: 9_000, seed: 2),
        ]
    }

    /// Serves `version` and returns its manifest (root `mirror`).
    func serve(version: Int, extra: String = "") -> String {
        var yaml = "version: 1\nroot: mirror\nitems:\n"
        for (name, body) in bodies(version: version).sorted(by: { $0.key < $1.key }) {
            server.set("/v\(version)/" + name, TestServer.Route(body: body))
            yaml += "  - {url: \(server.url("/v\(version)/" + name)), dest: \(name), sha256: \(sha(body))}\n"
        }
        return yaml + extra
    }

    /// The version whose files `current` holds, every one of them with its bytes; nil
    /// when `current` is missing or mixes versions.
    func publishedVersion(in dir: String, among versions: [Int]) -> Int? {
        let current = dir + "/mirror/current"
        return versions.first { version in
            bodies(version: version).allSatisfy { name, body in
                FileManager.default.contents(atPath: current + "/" + name).map { [UInt8]($0) } == body
            }
        }
    }

    func snapshotIDs(_ dir: String) -> [String] { SnapshotTree(root: dir + "/mirror").ids() }

    func syncOptions(keep: Int? = nil) -> SyncOptions {
        var options = testOptions()
        options.publish = .snapshot
        options.keep = keep
        return options
    }

    @Test func aSnapshotRunPublishesCurrentAndANoOpReadsNoByte() async throws {
        try await withTestDirectory { dir in
            let yaml = serve(version: 1)
            #expect(try await sync(yaml, in: dir, options: syncOptions()).exitCode == .success)
            #expect(publishedVersion(in: dir, among: [1]) == 1)
            let ids = snapshotIDs(dir)
            #expect(ids.count == 1 && SnapshotTree(root: dir + "/mirror").currentID() == ids.first)
            #expect(!exists(dir + "/mirror/.jgmirror/snapshots/next"))
            // A run that changes nothing trusts each record, and publishes nothing.
            let hashed = Locked<[String]>([])
            var options = syncOptions()
            options.hashedFile = { dest in hashed.withLock { $0.append(dest) } }
            let again = try await sync(yaml, in: dir, options: options)
            #expect(again.exitCode == .success)
            #expect(again.items.allSatisfy { $0.status == .unchanged })
            #expect(hashed.value.isEmpty, "\(hashed.value)")
            #expect(snapshotIDs(dir) == ids)
            #expect(again.snapshot == SnapshotOutcome(current: ids.first, published: false, unchanged: true))
            // A new version: hard links, one inode in both snapshots for an unchanged file.
            #expect(try await sync(serve(version: 2), in: dir, options: options).exitCode == .success)
            let newer = snapshotIDs(dir)
            #expect(newer.count == 2)
            var first = stat()
            var second = stat()
            let folder = dir + "/mirror/.jgmirror/snapshots/"
            #expect(stat(folder + newer[0] + "/f0.bin", &first) == 0 && stat(folder + newer[1] + "/f0.bin", &second) == 0)
            #expect(first.st_ino == second.st_ino)
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            #expect(try store.snapshots() == newer)
            store.close()
            // A publishing run past `keep` reuses the oldest snapshot as the next `next`,
            // which unlinks and links names of the current files (their ctime moves):
            // the runs after it still read no byte.
            options.keep = 2
            #expect(try await sync(serve(version: 3), in: dir, options: options).exitCode == .success)
            #expect(exists(dir + "/mirror/.jgmirror/snapshots/next"))
            // (A replaced file is hashed before it is fetched again; not so the runs after.)
            hashed.withLock { $0 = [] }
            for _ in 0..<2 {
                let noOp = try await sync(serve(version: 3), in: dir, options: options)
                #expect(noOp.exitCode == .success && noOp.items.allSatisfy { $0.status == .unchanged })
                #expect(noOp.snapshot?.unchanged == true)
            }
            #expect(hashed.value.isEmpty, "\(hashed.value)")
            #expect(snapshotIDs(dir).count == 2)
        }
    }

    @Test func keepPrunesTheOldestSnapshots() async throws {
        try await withTestDirectory { dir in
            var published: [String] = []
            for version in 1...4 {
                #expect(try await sync(serve(version: version), in: dir, options: syncOptions(keep: 2)).exitCode == .success)
                published.append(try #require(SnapshotTree(root: dir + "/mirror").currentID()))
                #expect(publishedVersion(in: dir, among: [version]) == version)
            }
            #expect(snapshotIDs(dir) == Array(published.suffix(2)))
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            defer { store.close() }
            #expect(try store.snapshots() == Array(published.suffix(2)))
        }
    }

    @Test func aFailedRunLeavesCurrentAndTheNextRunResumes() async throws {
        try await withTestDirectory { dir in
            #expect(try await sync(serve(version: 1), in: dir, options: syncOptions()).exitCode == .success)
            let before = SnapshotTree(root: dir + "/mirror").currentID()
            // Version 2 adds a file that cannot be fetched yet.
            let extra = "  - {url: \(server.url("/late.bin")), dest: late.bin, sha256: \(sha([9, 9]))}\n"
            var missing = TestServer.Route(body: [9, 9])
            missing.fault = { _ in .status(404) }
            server.set("/late.bin", missing)
            let failed = try await sync(serve(version: 2, extra: extra), in: dir, options: syncOptions())
            #expect(failed.exitCode != .success)
            #expect(SnapshotTree(root: dir + "/mirror").currentID() == before)
            #expect(publishedVersion(in: dir, among: [1, 2]) == 1)
            #expect(failed.warnings.contains { $0.contains("snapshot not published") }, "\(failed.warnings)")
            // The report says what readers still see, and that this run did not publish.
            #expect(failed.snapshot == SnapshotOutcome(current: before, published: false))
            let written = try JSONSerialization.jsonObject(with: Data(failed.json.rendered().utf8)) as? [String: Any]
            let snapshot = written?["snapshot"] as? [String: Any]
            #expect(snapshot?["current"] as? String == before && snapshot?["published"] as? Bool == false, "\(written ?? [:])")
            // Fixed upstream: the run resumes the snapshot it built, fetching f1 no more.
            server.set("/late.bin", TestServer.Route(body: [9, 9]))
            let fetched = server.requests().filter { $0.path == "/v2/f1.bin" }.count
            let fixed = try await sync(serve(version: 2, extra: extra), in: dir, options: syncOptions())
            #expect(fixed.exitCode == .success)
            #expect(server.requests().filter { $0.path == "/v2/f1.bin" }.count == fetched)
            #expect(publishedVersion(in: dir, among: [2]) == 2)
            #expect(SnapshotTree(root: dir + "/mirror").currentID() != before)
            let published = SnapshotTree(root: dir + "/mirror").currentID()
            #expect(fixed.snapshot == SnapshotOutcome(current: published, published: true))
        }
    }

    @Test func anOrderedRunIntoASnapshotTreeIsRefused() async throws {
        try await withTestDirectory { (dir: String) async throws in
            let yaml = serve(version: 1)
            #expect(try await sync(yaml, in: dir, options: syncOptions()).exitCode == .success)
            var options = testOptions()
            options.publish = .ordered
            do {
                _ = try await sync(yaml, in: dir, options: options)
                Issue.record("an ordered run into a snapshot tree went ahead")
            } catch {
                let refusal = error as? SyncError
                #expect(refusal?.errorDescription?.contains("is published as snapshots") == true, "\(error)")
                #expect(refusal?.exitCode == .usage)
            }
        }
    }

    /// Acceptance (issue 33): the binary is killed at each step of building and
    /// publishing a snapshot (and while placing files); after each kill `current`
    /// names a complete snapshot of one version, and a clean run then publishes the new one.
    @Test func aKillAtAnyStepLeavesCurrentComplete() async throws {
        try await withTestDirectory { dir in
            let base = ["--publish", "snapshot", "--keep", "2", "--progress", "none"]
            let first = write(serve(version: 1), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", first] + base).status == 0)
            let kills: [(String, String)] =
                SnapshotTree.Step.allCases.map { ("JGMIRROR_TEST_CRASH_IN_SNAPSHOT", $0.rawValue) }
                + [("JGMIRROR_TEST_CRASH_BEFORE_RECORDING", "1")]
                // The first `cloning` kill links a fresh `next` (one snapshot yet); this
                // one comes while the expired snapshot is being reused.
                + [("JGMIRROR_TEST_CRASH_IN_SNAPSHOT", SnapshotTree.Step.cloning.rawValue)]
            for (index, (variable, value)) in kills.enumerated() {
                let version = index + 2
                let path = write(serve(version: version), to: "m.yaml", in: dir)
                let killed = try await execute(["sync", path] + base, environment: [variable: value])
                #expect(killed.status == SIGKILL, "\(value): \(killed.status) \(killed.stderr)")
                #expect(publishedVersion(in: dir, among: [version - 1, version]) != nil, "after a kill at \(value)")
                let clean = try await execute(["sync", path] + base)
                #expect(clean.status == 0, "\(clean.stderr)")
                #expect(publishedVersion(in: dir, among: [version]) == version, "after a kill at \(value)")
                #expect(try await execute(["verify", path, "--progress", "none"]).status == 0)
            }
            #expect(snapshotIDs(dir).count == 2)
            // The database forgets the snapshots a killed run retired without saying so.
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            #expect(try store.snapshots() == snapshotIDs(dir))
            store.close()
            // `plan` reads the published snapshot: every item is there, unchanged.
            let plan = try await execute(["plan", write(serve(version: kills.count + 1), to: "m.yaml", in: dir)])
            #expect(plan.status == 0, "\(plan.stderr)")
            #expect(plan.stdout.split(separator: "\n").dropFirst().allSatisfy { $0.hasPrefix("unchanged") }, "\(plan.stdout)")
        }
    }

    @Test func publishSnapshotAndKeepParse() throws {
        let set = "version: 1\nsets:\n  - sums: https://h/rel/SUMS\n    dest: rel/\n"
        // A set below the root publishes its own folder; one at the root, the whole run.
        let own = try Manifest.parse(set + "    publish: snapshot\n    keep: 5\n")
        #expect(!own.publishesSnapshot && own.sets.first?.publish == true)
        #expect(own.snapshotSets == [SnapshotSet(folder: "rel/", keep: 5, location: SourceLocation(line: 3, column: 5))])
        let whole = try Manifest.parse(
            set.replacingOccurrences(of: "    dest: rel/\n", with: "") + "    publish: snapshot\n    keep: 5\n")
        #expect(whole.publishesSnapshot && whole.snapshotKeep == 5 && whole.snapshotSets.isEmpty)
        #expect {
            try Manifest.parse(set + "    keep: 2\n")
        } throws: { error in
            (error as? ManifestError)?.errorDescription?.contains(":5:5: 'keep' counts snapshots") == true
        }
        #expect {
            try Manifest.parse(set + "    publish: snapshot\n    keep: 1\n")
        } throws: { error in
            (error as? ManifestError)?.errorDescription?.contains("keep") == true
        }
    }
}
