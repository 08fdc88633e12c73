import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A set below the root with `publish: snapshot` (docs/publishing.md#a-sets-own-snapshots): its
/// folder is a link to snapshots of its own, swapped when the set alone is complete; the rest of
/// the tree is published in order, and one set's failure holds back no other set.
@Suite struct SetSnapshotTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// The files of release `version` of set `name`: `b.img` changes with the version.
    func bodies(_ name: String, version: Int) -> [String: [UInt8]] {
        let seed = UInt64(name.utf8.reduce(0) { $0 &* 31 &+ Int($1) } & 0xFFFF)
        return [
            "a.iso": TestServer.bytes(count: 21_000, seed: seed),
            "b.img": TestServer.bytes(count: 17_000 + version, seed: seed &+ UInt64(version) &* 7),
            "sub/c.bin": TestServer.bytes(count: 5_000, seed: seed &+ 1),
        ]
    }

    /// Serves release `version` of set `name` under `/<name>/v<version>/` (`names`: the
    /// files its list names; a name without a body is listed but answers 404).
    func serve(_ name: String, version: Int, names: [String]? = nil) -> String {
        let files = bodies(name, version: version)
        var list = ""
        for file in (names ?? files.keys.sorted()) {
            let path = "/\(name)/v\(version)/\(file)"
            if let body = files[file] {
                server.set(path, TestServer.Route(body: body))
                list += sha(body) + "  " + file + "\n"
            } else {
                var missing = TestServer.Route(body: [1])
                missing.fault = { _ in .status(404) }
                server.set(path, missing)
                list += sha([1]) + "  " + file + "\n"
            }
        }
        let sums = "/\(name)/v\(version)/SHA256SUMS"
        server.set(sums, TestServer.Route(body: Array(list.utf8)))
        return server.url(sums)
    }

    /// A set of `sums` into `name/`, published as snapshots of its own.
    func set(_ name: String, sums: String, publish: String = "snapshot") -> String {
        "  - sums: \(sums)\n    dest: \(name)/\n    publish: \(publish)\n"
    }

    /// The release of set `name` that `mirror/<name>` shows, when it shows one whole:
    /// its list names exactly that release's files, each present with its bytes.
    func shownVersion(_ name: String, in dir: String, among versions: [Int]) -> Int? {
        let folder = dir + "/mirror/" + name
        guard let list = FileManager.default.contents(atPath: folder + "/SHA256SUMS") else { return nil }
        return versions.first { version in
            let files = bodies(name, version: version)
            let expected = files.keys.sorted().map { sha(files[$0]!) + "  " + $0 }.joined(separator: "\n") + "\n"
            return Data(expected.utf8) == list
                && files.allSatisfy { file, body in
                    FileManager.default.contents(atPath: folder + "/" + file).map { [UInt8]($0) } == body
                }
        }
    }

    /// A manifest's start: its root is `mirror`, beside it, as `run` makes it.
    let head = "version: 1\nroot: mirror\nsets:\n"

    func tree(_ dir: String, _ name: String) -> SnapshotTree { SnapshotTree(root: dir + "/mirror", scope: name) }

    @Test func aSetFolderIsALinkToItsOwnSnapshotAndANoOpReadsNoByte() async throws {
        try await withTestDirectory { dir in
            server.set("/other.bin", TestServer.Route(body: [7, 7, 7]))
            let yaml =
                head + set("rel", sums: serve("rel", version: 1))
                + "items:\n  - {url: \(server.url("/other.bin")), dest: other.bin, sha256: \(sha([7, 7, 7]))}\n"
            let first = try await syncSets(yaml, in: dir)
            #expect(first.exitCode == .success, "\(first.warnings)")
            #expect(shownVersion("rel", in: dir, among: [1]) == 1)
            let id = try #require(tree(dir, "rel").currentID())
            #expect(Symlink.target(dir + "/mirror/rel") == "\(StateFolder.name)/set-snapshots/rel/\(id)/rel")
            #expect(first.setSnapshots == [SnapshotOutcome(current: id, published: true, folder: "rel/")])
            #expect(first.snapshot == nil && !exists(dir + "/mirror/current"))
            // The rest of the tree is published in order, as plain files.
            #expect(Symlink.target(dir + "/mirror/other.bin") == nil && exists(dir + "/mirror/other.bin"))
            let written = try JSONSerialization.jsonObject(with: Data(first.json.rendered().utf8)) as? [String: Any]
            let sets = written?["set_snapshots"] as? [[String: Any]]
            #expect(sets?.first?["folder"] as? String == "rel/" && sets?.first?["current"] as? String == id)

            let hashed = Locked<[String]>([])
            var options = testOptions()
            options.hashedFile = { dest in hashed.withLock { $0.append(dest) } }
            let again = try await syncSets(yaml, in: dir, options: options)
            #expect(again.exitCode == .success && again.items.allSatisfy { $0.status == .unchanged }, "\(again.items)")
            #expect(hashed.value.isEmpty, "\(hashed.value)")
            // Nothing changed: the set's link stays where it was, and the report says so.
            #expect(tree(dir, "rel").currentID() == id && shownVersion("rel", in: dir, among: [1]) == 1)
            #expect(again.setSnapshots == [SnapshotOutcome(current: id, published: false, folder: "rel/", unchanged: true)])
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            defer { store.close() }
            #expect(try store.snapshots(folder: "rel/") == tree(dir, "rel").ids())
            #expect(try store.snapshots().isEmpty)
        }
    }

    /// Acceptance (issue 33): one set's bad list, or a file of it that fails, holds back
    /// that set's snapshot alone: the other set publishes its new release.
    @Test func aFailedSetKeepsItsLinkWhileAnotherSetPublishes() async throws {
        try await withTestDirectory { dir in
            let one = head + set("rel", sums: serve("rel", version: 1)) + set("os", sums: serve("os", version: 1))
            #expect(try await syncSets(one, in: dir).exitCode == .success)
            let (rel, os) = (tree(dir, "rel").currentID(), tree(dir, "os").currentID())

            // Release 2: `rel` lists a file that cannot be fetched; `os`'s is fine.
            let failing = serve("rel", version: 2, names: ["a.iso", "b.img", "late.bin", "sub/c.bin"])
            let two = head + set("rel", sums: failing) + set("os", sums: serve("os", version: 2))
            let report = try await syncSets(two, in: dir)
            #expect(report.exitCode != .success)
            #expect(tree(dir, "rel").currentID() == rel && shownVersion("rel", in: dir, among: [1, 2]) == 1)
            #expect(tree(dir, "os").currentID() != os && shownVersion("os", in: dir, among: [1, 2]) == 2)
            #expect(report.warnings.contains { $0.contains("snapshot of the set at 'rel/' not published") }, "\(report.warnings)")
            #expect(report.setSnapshots.map(\.published) == [false, true])

            // Release 3: `rel`'s list cannot be fetched at all; `os` still publishes.
            var gone = TestServer.Route(body: [])
            gone.fault = { _ in .status(404) }
            server.set("/rel/v3/SHA256SUMS", gone)
            let three = head + set("rel", sums: server.url("/rel/v3/SHA256SUMS")) + set("os", sums: serve("os", version: 3))
            let listFailed = try await syncSets(three, in: dir)
            #expect(listFailed.exitCode != .success)
            #expect(shownVersion("rel", in: dir, among: [1]) == 1 && shownVersion("os", in: dir, among: [3]) == 3)

            // Fixed upstream: the run resumes the snapshot it built and publishes it.
            let fixed = try await syncSets(
                head + set("rel", sums: serve("rel", version: 2)) + set("os", sums: serve("os", version: 3)), in: dir)
            #expect(fixed.exitCode == .success, "\(fixed.warnings)")
            #expect(shownVersion("rel", in: dir, among: [2]) == 2)
        }
    }

    /// A set synced in order that turns to `publish: snapshot`: its folder's files are
    /// linked into the first snapshot (nothing is fetched), and the folder becomes the
    /// link in one exchange, with nothing left beside it.
    @Test func aFolderSyncedInOrderBecomesItsFirstSnapshot() async throws {
        try await withTestDirectory { dir in
            let sums = serve("rel", version: 1)
            #expect(try await syncSets(head + set("rel", sums: sums, publish: "true"), in: dir).exitCode == .success)
            #expect(Symlink.target(dir + "/mirror/rel") == nil)
            let fetched = server.requests().count
            let hashed = Locked<[String]>([])
            var options = testOptions()
            options.hashedFile = { dest in hashed.withLock { $0.append(dest) } }
            let report = try await syncSets(head + set("rel", sums: sums), in: dir, options: options)
            #expect(report.exitCode == .success, "\(report.warnings)")
            #expect(report.items.allSatisfy { $0.status == .unchanged }, "\(report.items.map { ($0.dest, $0.status) })")
            #expect(hashed.value.isEmpty, "\(hashed.value)")
            // The list only: no file is fetched again.
            #expect(server.requests().count == fetched + 1)
            #expect(tree(dir, "rel").currentID() != nil && shownVersion("rel", in: dir, among: [1]) == 1)
            let beside = try FileManager.default.contentsOfDirectory(atPath: dir + "/mirror")
            #expect(beside.sorted() == [".jgmirror", "rel"], "\(beside)")
            #expect(try await execute(["verify", write(head + set("rel", sums: sums), to: "m.yaml", in: dir)]).status == 0)
        }
    }

    /// `--delete` removes what the set's new list no longer names inside its new
    /// snapshot: readers of the old one still have it until that snapshot is retired.
    @Test func deleteRemovesInsideTheSetsSnapshot() async throws {
        try await withTestDirectory { dir in
            var options = testOptions()
            options.delete = true
            #expect(
                try await syncSets(head + set("rel", sums: serve("rel", version: 1)), in: dir, options: options).exitCode
                    == .success)
            let old = try #require(tree(dir, "rel").published)
            let fewer = serve("rel", version: 1, names: ["a.iso", "b.img"])
            let report = try await syncSets(head + set("rel", sums: fewer), in: dir, options: options)
            #expect(report.exitCode == .success, "\(report.warnings)")
            #expect(report.items.first { $0.dest == "rel/sub/c.bin" }?.status == .deleted)
            #expect(!exists(dir + "/mirror/rel/sub/c.bin") && exists(dir + "/mirror/rel/a.iso"))
            #expect(exists(old + "/rel/sub/c.bin"))
        }
    }

    @Test func nothingElseMayLieInASetsOwnFolder() throws {
        let head = "version: 1\nsets:\n  - sums: https://h/rel/SUMS\n    dest: rel/\n    publish: snapshot\n"
        #expect {
            try Manifest.parse(head + "items:\n  - {url: https://h/x, dest: rel/x}\n")
        } throws: { error in
            (error as? ManifestError)?.errorDescription?.contains(
                ":7:30: destination 'rel/x' lies inside 'rel/', which the set at line 3 publishes as snapshots of its own")
                == true
        }
        #expect {
            try Manifest.parse(head + "  - sums: https://h/rel/deep/SUMS\n    dest: rel/deep/\n")
        } throws: { error in
            (error as? ManifestError)?.errorDescription?.contains(":6:5: the set's folder 'rel/deep/' lies inside 'rel/'") == true
        }
        let manifest = try Manifest.parse(head)
        #expect(manifest.snapshotSets.map(\.folder) == ["rel/"] && !manifest.publishesSnapshot)
    }

    /// A link the run would not follow is refused before anything is fetched: under
    /// `--publish snapshot`, for a set that no longer publishes snapshots, and for a
    /// filter that selects part of the set.
    @Test func runsThatWouldBreakASetsLinkAreRefused() async throws {
        try await withTestDirectory { dir in
            let sums = serve("rel", version: 1)
            #expect(try await syncSets(head + set("rel", sums: sums), in: dir).exitCode == .success)
            var whole = testOptions()
            whole.publish = .snapshot
            let refusals: [(String, SyncOptions, String)] = [
                (set("rel", sums: sums), whole, "the whole tree cannot be published as one snapshot around it"),
                (set("rel", sums: sums, publish: "true"), testOptions(), "its set no longer says 'publish: snapshot'"),
            ]
            for (entry, options, message) in refusals {
                do {
                    _ = try await syncSets(head + entry, in: dir, options: options)
                    Issue.record("went ahead: \(message)")
                } catch {
                    #expect((error as? SyncError)?.exitCode == .usage)
                    #expect((error as? SyncError)?.errorDescription?.contains(message) == true, "\(error)")
                }
            }
            var manifest = try Manifest.load(path: write(head + set("rel", sums: sums), to: "m.yaml", in: dir))
            try await manifest.expandSets(options: testOptions())
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            planOptions.shard = try Shard(parsing: "1/2")
            do {
                _ = try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: testOptions()).run()
                Issue.record("a shard of a set's snapshot went ahead")
            } catch {
                #expect((error as? SyncError)?.errorDescription?.contains("a snapshot needs them all") == true, "\(error)")
            }
            // A set's folder below a symlink: its link would be made outside the root.
            let outside = dir + "/outside"
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/mirror/up", withDestinationPath: outside)
            do {
                _ = try await syncSets(head + set("up/rel", sums: sums), in: dir)
                Issue.record("a set's folder below a symlink went ahead")
            } catch {
                #expect((error as? SyncError)?.errorDescription?.contains("never follows one below the root") == true, "\(error)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
            #expect(shownVersion("rel", in: dir, among: [1]) == 1)
        }
    }

    /// Acceptance (issue 33), for a set's own snapshots: the binary is killed at each
    /// step of building and publishing one; after each kill the set's folder shows one
    /// whole release, and a clean run then publishes the new one.
    @Test func aKillAtAnyStepLeavesTheSetsFolderWhole() async throws {
        try await withTestDirectory { dir in
            let base = ["--keep", "2", "--progress", "none"]
            func manifest(_ version: Int) -> String {
                write(head + set("rel", sums: serve("rel", version: version)), to: "m.yaml", in: dir)
            }
            // Release 1 in order, so that the first kill at `swapped` falls on the exchange.
            let ordered = write(head + set("rel", sums: serve("rel", version: 1), publish: "true"), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", ordered] + base).status == 0)
            // After the first clean run two snapshots hold one release, and reusing one
            // changes nothing: `cloning` comes last, where it reuses an older release.
            let steps: [SnapshotTree.Step] = [.swapped, .built, .renamed, .swapped, .pruning, .cloning]
            #expect(Set(steps) == Set(SnapshotTree.Step.allCases))
            for (index, step) in steps.enumerated() {
                let version = index + 2
                let path = manifest(version)
                let killed = try await execute(
                    ["sync", path] + base, environment: ["JGMIRROR_TEST_CRASH_IN_SNAPSHOT": step.rawValue])
                #expect(killed.status == SIGKILL, "\(step): \(killed.status) \(killed.stderr)")
                #expect(shownVersion("rel", in: dir, among: [version - 1, version]) != nil, "after a kill at \(step)")
                let clean = try await execute(["sync", path] + base)
                #expect(clean.status == 0, "\(clean.stderr)")
                #expect(shownVersion("rel", in: dir, among: [version]) == version, "after a kill at \(step)")
                #expect(try await execute(["verify", path, "--progress", "none"]).status == 0)
            }
            #expect(tree(dir, "rel").ids().count == 2)
            let beside = try FileManager.default.contentsOfDirectory(atPath: dir + "/mirror")
            #expect(beside.sorted() == [".jgmirror", "rel"], "\(beside)")
        }
    }
}
