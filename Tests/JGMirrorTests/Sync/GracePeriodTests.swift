import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `keep_removed` (docs/deletions.md#grace-period): a file that left every list stays
/// for its set's grace period before `--delete` removes it, so a reader holding the
/// previous list can still fetch it. Time comes from the run's clock, which these
/// tests set: no test waits for a day to pass.
@Suite struct GracePeriodTests {
    let server: TestServer
    /// name → body, each served at `/rel/NAME`.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        var files: [String: [UInt8]] = [:]
        for index in 0..<4 {
            let name = "f\(index).bin"
            files[name] = TestServer.bytes(count: 1500 + index * 31, seed: UInt64(8800 + index))
            server.set("/rel/" + name, TestServer.Route(body: files[name] ?? []))
        }
        self.files = files
    }

    /// Serves a SHA256SUMS list of `names` at `/rel/SHA256SUMS`.
    func list(_ names: [String]) {
        let text = names.map { sha(files[$0] ?? []) + "  " + $0 }.joined(separator: "\n") + "\n"
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(text.utf8)))
    }

    /// A manifest of one set at `rel/`, with `setKeys` in the set and `defaults` under `defaults:`.
    func manifest(setKeys: String = "", defaults: String = "") -> String {
        var text = "version: 1\n"
        if !defaults.isEmpty { text += "defaults: {\(defaults)}\n" }
        let extra = setKeys.isEmpty ? "" : ", " + setKeys
        return text + "sets:\n  - {sums: \(server.url("/rel/SHA256SUMS")), dest: rel/\(extra)}\n"
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// `testOptions()` with `--delete` and the clock at `start` + `seconds`.
    func deleting(at seconds: Double, publish: PublishMode? = nil) -> SyncOptions {
        var options = testOptions()
        options.delete = true
        options.publish = publish
        options.clock = { Self.start.addingTimeInterval(seconds) }
        return options
    }

    // MARK: The rule, in virtual time

    @Test func theDeepestSetFolderGivesAFileItsPeriod() {
        let grace = RemovalGrace(
            folders: [.init(folder: "debian/dists/", seconds: 0), .init(folder: "debian/", seconds: 86_400)], elsewhere: 60)
        #expect(grace.period(of: "debian/pool/a.deb") == 86_400)
        #expect(grace.period(of: "debian/dists/x") == 0)
        #expect(grace.period(of: "loose.txt") == 60)
        let file = Prune.File(path: "debian/pool/a.deb", size: 3)
        // First missed now: kept a day. Missed a day and a second ago: deleted.
        #expect(grace.split([file], absences: [:], now: 1000).kept.first?.until == Int64(87_400))
        #expect(grace.split([file], absences: [file.path: 1000], now: 1000 + 86_399).delete.isEmpty)
        #expect(grace.split([file], absences: [file.path: 1000], now: 1000 + 86_400).delete == [file])
        // No period: deleted at once, with or without a record.
        #expect(grace.split([Prune.File(path: "debian/dists/x", size: 1)], absences: [:], now: 5).kept.isEmpty)
    }

    @Test func theCommandLineOverridesEverySetAndTheKindsDefault() throws {
        var manifest = try Manifest.parse(manifest(setKeys: "keep_removed: 2h", defaults: "keep_removed: 1m"))
        manifest.setKeepRemoved = ["rel/": 7200]
        let grace = RemovalGrace(manifest: manifest)
        #expect(grace.period(of: "rel/a") == 7200 && grace.period(of: "b") == 60)
        let overridden = RemovalGrace(manifest: manifest, override: 0)
        #expect(overridden.period(of: "rel/a") == 0 && overridden.period(of: "b") == 0)
    }

    // MARK: Through a run, in virtual time

    /// A file that left the list stays a day, then goes; the state database says since
    /// when it was absent, so the day counts from the first run that missed it.
    @Test func aFileThatLeftItsListGoesOnceItsPeriodIsOver() async throws {
        try await withTestDirectory { dir in
            let yaml = manifest(setKeys: "keep_removed: 1d")
            list(["f0.bin", "f1.bin", "f2.bin", "f3.bin"])
            #expect(try await syncSets(yaml, in: dir, options: deleting(at: 0)).exitCode == .success)
            list(["f0.bin", "f1.bin", "f2.bin"])
            let first = try await syncSets(yaml, in: dir, options: deleting(at: 3600))
            #expect(first.exitCode == .success)
            let kept = try #require(first.items.first { $0.dest == "rel/f3.bin" })
            #expect(kept.status == .keptRemoved && kept.keptUntil == "2027-01-16T09:00:00Z", "\(kept)")
            #expect(first.totals.keptRemoved == 1 && first.totals.deleted == 0)
            #expect(exists(dir + "/mirror/rel/f3.bin"))
            // Later runs keep it until a day after the first that missed it.
            let later = try await syncSets(yaml, in: dir, options: deleting(at: 3600 + 86_399))
            #expect(status(later, "rel/f3.bin") == .keptRemoved && exists(dir + "/mirror/rel/f3.bin"))
            let due = try await syncSets(yaml, in: dir, options: deleting(at: 3600 + 86_400))
            #expect(status(due, "rel/f3.bin") == .deleted && !exists(dir + "/mirror/rel/f3.bin"))
            let store = try #require(StateStore.openExisting(root: dir + "/mirror"))
            defer { store.close() }
            #expect(store.absences() == [:], "a deleted file's record goes with it")
        }
    }

    /// A file back in the list is no longer absent: when it leaves again its period
    /// starts again.
    @Test func aFileBackInItsListStartsItsPeriodAfresh() async throws {
        try await withTestDirectory { dir in
            let yaml = manifest(setKeys: "keep_removed: 1d")
            list(["f0.bin", "f1.bin", "f2.bin"])
            _ = try await syncSets(yaml, in: dir, options: deleting(at: 0))
            list(["f0.bin", "f1.bin"])
            #expect(status(try await syncSets(yaml, in: dir, options: deleting(at: 100)), "rel/f2.bin") == .keptRemoved)
            list(["f0.bin", "f1.bin", "f2.bin"])
            #expect(status(try await syncSets(yaml, in: dir, options: deleting(at: 200)), "rel/f2.bin") == .unchanged)
            list(["f0.bin", "f1.bin"])
            _ = try await syncSets(yaml, in: dir, options: deleting(at: 50_000))
            // A day after the first miss, but not after the second: it stays.
            let run = try await syncSets(yaml, in: dir, options: deleting(at: 100 + 86_400))
            #expect(status(run, "rel/f2.bin") == .keptRemoved && exists(dir + "/mirror/rel/f2.bin"))
        }
    }

    /// `--max-delete` weighs what is deleted: files within their period do not count,
    /// and once their time is up they do.
    @Test func maxDeleteCountsOnlyWhatIsDeleted() async throws {
        try await withTestDirectory { dir in
            let yaml = manifest(setKeys: "keep_removed: 1h")
            list(["f0.bin", "f1.bin", "f2.bin", "f3.bin"])
            _ = try await syncSets(yaml, in: dir, options: deleting(at: 0))
            list(["f0.bin"])
            var options = deleting(at: 10)
            (options.deleteLimits.count, options.deleteLimits.share) = (0, 1)
            #expect(try await syncSets(yaml, in: dir, options: options).totals.keptRemoved == 3)
            options = deleting(at: 10 + 3600)
            (options.deleteLimits.count, options.deleteLimits.share) = (0, 1)
            await #expect(throws: SyncError.self) { _ = try await syncSets(yaml, in: dir, options: options) }
            #expect(exists(dir + "/mirror/rel/f1.bin"))
        }
    }

    /// `defaults: keep_removed` gives files outside every set their period: here a
    /// file a former item placed.
    @Test func defaultsGiveFilesOutsideEverySetTheirPeriod() async throws {
        try await withTestDirectory { dir in
            list(["f0.bin"])
            write("old", to: "mirror/loose.txt", in: dir)
            let run = try await syncSets(manifest(defaults: "keep_removed: 2h"), in: dir, options: deleting(at: 0))
            let kept = try #require(run.items.first { $0.dest == "loose.txt" })
            #expect(kept.status == .keptRemoved && kept.keptUntil == "2027-01-15T10:00:00Z")
            // Without it, a file outside every set has no period: it goes at once.
            let none = try await syncSets(manifest(), in: dir, options: deleting(at: 60))
            #expect(status(none, "loose.txt") == .deleted && !exists(dir + "/mirror/loose.txt"))
        }
    }

    /// Under `--publish snapshot` a file within its period is carried into each new
    /// snapshot, and is absent from the first one built after its time is up.
    @Test func snapshotsCarryAFileUntilItsPeriodIsOver() async throws {
        try await withTestDirectory { dir in
            let yaml = manifest(setKeys: "keep_removed: 1d")
            list(["f0.bin", "f1.bin", "f2.bin"])
            #expect(try await syncSets(yaml, in: dir, options: deleting(at: 0, publish: .snapshot)).exitCode == .success)
            list(["f0.bin", "f1.bin"])
            _ = try await syncSets(yaml, in: dir, options: deleting(at: 100, publish: .snapshot))
            list(["f0.bin"])
            let kept = try await syncSets(yaml, in: dir, options: deleting(at: 200, publish: .snapshot))
            // Nothing changed: the snapshot readers have still holds both.
            #expect(kept.snapshot?.unchanged == true && status(kept, "rel/f2.bin") == .keptRemoved)
            #expect(exists(dir + "/mirror/current/rel/f2.bin") && exists(dir + "/mirror/current/rel/f1.bin"))
            // f2 left at 100, f1 at 200: a day after 100, f2's time is up and not f1's.
            let due = try await syncSets(yaml, in: dir, options: deleting(at: 100 + 86_400, publish: .snapshot))
            #expect(due.snapshot?.published == true, "\(String(describing: due.snapshot))")
            #expect(!exists(dir + "/mirror/current/rel/f2.bin") && exists(dir + "/mirror/current/rel/f1.bin"))
            #expect(status(due, "rel/f2.bin") == .deleted && status(due, "rel/f1.bin") == .keptRemoved)
        }
    }
}

/// `keep_removed` through the built binary: the row every output gives a kept file,
/// `plan --delete`, `--keep-removed`, and the manifest's errors.
@Suite struct GracePeriodEndToEndTests {
    @Test func aKeptFileIsARowOfEveryOutputAndTheCommandLineOverridesIt() async throws {
        let grace = try GracePeriodTests()
        try await withTestDirectory { dir in
            let path = write("root: mirror\n" + grace.manifest(setKeys: "keep_removed: 1d"), to: "m.yaml", in: dir)
            grace.list(["f0.bin", "f1.bin", "f2.bin", "f3.bin"])
            #expect(try await execute(["sync", path, "--delete", "--progress", "none"]).status == 0)
            grace.list(["f0.bin", "f1.bin", "f2.bin"])
            let out = outputs(beside: dir)
            let run = try await execute([
                "sync", path, "--delete", "--progress", "lines", "--report", out + "/r.json", "--junit", out + "/j.xml",
                "--metrics", out + "/m.prom", "--events", out + "/e.jsonl",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(exists(dir + "/mirror/rel/f3.bin"))
            let items = try loadReport(out + "/r.json")["items"] as? [[String: Any]] ?? []
            let kept = try #require(items.first { $0["dest"] as? String == "rel/f3.bin" })
            #expect(kept["status"] as? String == "kept_removed" && (kept["kept_until"] as? String)?.hasSuffix("Z") == true)
            let totals = try loadReport(out + "/r.json")["totals"] as? [String: Any]
            #expect(totals?["kept_removed"] as? Int == 1 && totals?["deleted"] as? Int == 0)
            let junit = try String(contentsOfFile: out + "/j.xml", encoding: .utf8)
            #expect(junit.contains("name=\"rel/f3.bin\"") && junit.contains("status: kept_removed"))
            let metrics = try String(contentsOfFile: out + "/m.prom", encoding: .utf8)
            #expect(metrics.contains("status=\"kept_removed\"} 1"), "\(metrics)")
            let events = try String(contentsOfFile: out + "/e.jsonl", encoding: .utf8)
            #expect(events.split(separator: "\n").contains { $0.contains("\"kept_removed\"") && $0.contains("rel/f3.bin") })
            #expect(run.stderr.contains("kept_removed rel/f3.bin (kept until "), "\(run.stderr)")
            #expect(run.stderr.contains("1 kept removed"), "\(run.stderr)")

            // plan --delete tells the same, and what --keep-removed would change.
            let plan = try await execute(["plan", path, "--delete"])
            let keepRow = plan.stdout.split(separator: "\n").first { $0.hasPrefix("keep") && $0.contains("rel/f3.bin") }
            #expect(keepRow?.contains("until ") == true, "\(plan.stdout)")
            let planNow = try await execute(["plan", path, "--delete", "--keep-removed", "0s"])
            #expect(planNow.stdout.split(separator: "\n").contains { $0.hasPrefix("delete") && $0.contains("rel/f3.bin") })

            // --keep-removed overrides the set's day: the file goes now.
            let now = try await execute(["sync", path, "--delete", "--keep-removed", "0s", "--report", out + "/r2.json"])
            #expect(now.status == 0, "\(now.stderr)")
            #expect(!exists(dir + "/mirror/rel/f3.bin"))
        }
    }

    @Test(arguments: [
        ("  - {sums: http://h/S, keep_removed: 366d}\n", "m.yaml:3:38: 'keep_removed' must be from 0s to 365d"),
        ("  - {sums: http://h/S, keep_removed: soon}\n", "m.yaml:3:38: 'keep_removed' must be a duration such as 500ms"),
    ])
    func aGracePeriodOutOfBoundsIsAManifestError(set: String, expected: String) async throws {
        try await withTestDirectory { dir in
            let path = write("version: 1\nsets:\n" + set, to: "m.yaml", in: dir)
            let run = try await execute(["plan", path])
            #expect(
                run.status == 2 && run.stderr.contains(path.replacingOccurrences(of: "m.yaml", with: "") + expected),
                "\(run.stderr)")
        }
    }

    @Test func aGracePeriodIsNoItemKey() throws {
        #expect(throws: ManifestError.self) {
            _ = try Manifest.parse("version: 1\nitems:\n  - {url: http://h/a, keep_removed: 1d}\n", name: "m.yaml")
        }
        let manifest = try Manifest.parse("version: 1\ndefaults: {keep_removed: 12h}\nitems:\n  - {url: http://h/a}\n")
        #expect(manifest.keepRemoved == 43_200)
    }
}
