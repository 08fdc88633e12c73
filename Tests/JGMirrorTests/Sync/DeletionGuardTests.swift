import Foundation
import TestServer
import Testing

@testable import JGMirror

/// What `sync --delete` decides, through the built binary (issue 41, points 11, 15,
/// 16, 17): a set whose list shrank fails alone and the rest goes on; `plan --delete`
/// lists what `sync --delete` deletes; `--backup-dir` is never the root nor inside
/// it, and keeps a file a link replaces.
@Suite struct DeletionGuardTests {
    let server: TestServer
    /// name → body, each served at `/rel/NAME` and `/other/NAME`.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        files = serveThirtyFiles(on: server, at: ["/rel/", "/other/"], size: 2000, step: 53, seed: 4100)
    }

    var names: [String] { files.keys.sorted() }

    /// A SHA256SUMS list of `names`.
    func sums(_ names: [String]) -> String { names.map { sha(files[$0]!) + "  " + $0 }.joined(separator: "\n") + "\n" }

    /// The regular files and links under `root`, outside `.jgmirror`, relative and sorted.
    func tree(_ root: String) -> [String] {
        let all = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        return all.filter { path in
            var info = stat()
            return !path.hasPrefix(".jgmirror") && lstat(root + "/" + path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFDIR
        }.sorted()
    }

    func rows(_ path: String) throws -> [[String: Any]] { try loadReport(path)["items"] as? [[String: Any]] ?? [] }

    /// Two sets: `rel/` (30 files, its list published) and `other/`.
    func twoSets(in dir: String) -> String {
        let yaml = """
            version: 1
            root: mirror
            sets:
              - {sums: \(server.url("/rel/SHA256SUMS")), dest: rel/, publish: true}
              - {sums: \(server.url("/other/SHA256SUMS")), dest: other/}
            """
        return write(yaml, to: "m.yaml", in: dir)
    }

    // MARK: Point 11: a shrunk list fails its own set

    /// A list cut from 30 to 5 lines fails its set alone (`list_shrunk`, exit 1): none
    /// of its files is deleted and its list stays the published one, while the other
    /// set is fetched and pruned. The count on the whole root still refuses the run.
    @Test func aShrunkListFailsItsSetAloneAndTheOtherSetsGoOn() async throws {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(names).utf8)))
        server.set("/other/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin", "file01.bin"]).utf8)))
        try await withTestDirectory { dir in
            let path = twoSets(in: dir)
            #expect(try await execute(["sync", path, "--delete", "--progress", "none"]).status == 0)
            server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(Array(names.prefix(5))).utf8)))
            let three = sums(["file00.bin", "file01.bin", "file02.bin"])
            server.set("/other/SHA256SUMS", TestServer.Route(body: Array(three.utf8)))
            write("stray", to: "mirror/other/stray.txt", in: dir)
            let run = try await execute([
                "sync", path, "--delete", "--report", dir + "/r.json", "--progress", "none",
            ])
            #expect(run.status == 1, "\(run.stderr)")
            let report = try rows(dir + "/r.json")
            let set = try #require(report.first { $0["dest"] as? String == "rel/" }, "\(report)")
            #expect(set["status"] as? String == "failed" && code(set) == "list_shrunk")
            #expect(set["url"] as? String == server.url("/rel/SHA256SUMS"))
            let message = (set["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("now names 5 files where the folder holds 30"), "\(message)")
            #expect(message.contains("none was deleted") && !message.contains("raise --max-delete"), "\(message)")
            #expect(run.stderr.contains("list_shrunk") || run.stderr.contains("now names 5 files"), "\(run.stderr)")
            // Nothing of `rel/` went, and its published list is still the full one.
            #expect(tree(dir + "/mirror/rel").count == 31)
            #expect(try String(contentsOfFile: dir + "/mirror/rel/SHA256SUMS", encoding: .utf8) == sums(names))
            // The other set went on: fetched and pruned.
            #expect(tree(dir + "/mirror/other") == ["file00.bin", "file01.bin", "file02.bin"])
            #expect(report.first { $0["dest"] as? String == "other/stray.txt" }?["status"] as? String == "deleted")
            // The count is a limit on the whole root: over it, nothing is fetched or deleted (exit 4).
            let counted = try await execute([
                "sync", path, "--delete", "--max-delete", "100%", "--max-delete", "24", "--progress", "none",
            ])
            #expect(counted.status == 4 && counted.stderr.contains("more than --max-delete 24"), "\(counted.stderr)")
            let allowed = try await execute(["sync", path, "--delete", "--max-delete", "100%", "--progress", "none"])
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(tree(dir + "/mirror/rel") == ["SHA256SUMS"] + names.prefix(5))
        }
    }

    // MARK: Point 15: plan and sync share the decision

    /// A set's published list and signature are the run's own files: `plan --delete`
    /// does not list them, and lists exactly what `sync --delete` then deletes.
    @Test func planDeleteListsWhatSyncDeleteDeletes() async throws {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(Array(names.prefix(6))).utf8)))
        server.set("/other/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin"]).utf8)))
        try await withTestDirectory { dir in
            let path = twoSets(in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            #expect(exists(dir + "/mirror/rel/SHA256SUMS"))
            write("stray", to: "mirror/rel/stray.txt", in: dir)
            let plan = try await execute(["plan", path, "--delete"])
            #expect(plan.status == 0, "\(plan.stderr)")
            // ACTION SIZE CONN TAG DEST URL: the destination is the last but one column.
            let planned = plan.stdout.split(separator: "\n").filter { $0.hasPrefix("delete ") }.map {
                String($0.split(separator: " ", omittingEmptySubsequences: true).dropLast().last ?? "")
            }
            let run = try await execute([
                "sync", path, "--delete", "--report", dir + "/r.json", "--progress", "none",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let deleted = try rows(dir + "/r.json").filter { $0["status"] as? String == "deleted" }.compactMap {
                $0["dest"] as? String
            }
            #expect(planned == ["rel/stray.txt"], "\(plan.stdout)")
            #expect(deleted == planned)
            #expect(exists(dir + "/mirror/rel/SHA256SUMS"))
        }
    }

    /// Over `--max-delete`'s count, `plan --delete` exits 4 as `sync --delete` does.
    @Test func planDeleteExitsFourWhereSyncDeleteRefusesTheRun() async throws {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(Array(names.prefix(6))).utf8)))
        server.set("/other/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin"]).utf8)))
        try await withTestDirectory { dir in
            let path = twoSets(in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            for index in 0..<3 { write("stray", to: "mirror/stray\(index).txt", in: dir) }
            let plan = try await execute(["plan", path, "--delete", "--max-delete", "2"])
            #expect(plan.status == 4, "\(plan.stderr)")
            #expect(plan.stderr.contains("sync --delete would refuse"), "\(plan.stderr)")
            let sync = try await execute(["sync", path, "--delete", "--max-delete", "2", "--progress", "none"])
            #expect(sync.status == 4, "\(sync.stderr)")
            #expect(exists(dir + "/mirror/stray0.txt"))
        }
    }

    /// `plan --delete` names the set a shrunk list would fail, and exits as sync would.
    @Test func planDeleteNamesAShrunkSet() async throws {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(names).utf8)))
        server.set("/other/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin"]).utf8)))
        try await withTestDirectory { dir in
            let path = twoSets(in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(Array(names.prefix(5))).utf8)))
            let plan = try await execute(["plan", path, "--delete"])
            #expect(plan.status == 1, "\(plan.stderr)")
            #expect(plan.stderr.contains("rel/: the list of the set at 'rel/'"), "\(plan.stderr)")
            #expect(!plan.stdout.contains("delete "), "\(plan.stdout)")
        }
    }

    // MARK: Point 16: a backup folder outside the root

    @Test(arguments: ["mirror", "mirror/", "mirror/backup", "alias/backup"])
    func aBackupDirThatIsOrLiesInsideTheRootIsRefused(backup: String) async throws {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin"]).utf8)))
        try await withTestDirectory { dir in
            let yaml = "version: 1\nroot: mirror\nitems:\n  - {url: \(server.url("/rel/file00.bin")), dest: a.bin}\n"
            let path = write(yaml, to: "m.yaml", in: dir)
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/alias", withDestinationPath: "mirror")
            let run = try await execute(["sync", path, "--delete", "--backup-dir", dir + "/" + backup, "--progress", "none"])
            #expect(run.status == 2, "\(run.stderr)")
            let place = backup.hasPrefix("mirror") && backup.count <= 7 ? "is the root" : "lies inside the root"
            #expect(run.stderr.contains("--backup-dir") && run.stderr.contains(place), "\(run.stderr)")
            #expect(run.stderr.contains("deleted by the next --delete run"), "\(run.stderr)")
            #expect(server.requests().isEmpty)
            #expect(!exists(dir + "/mirror/a.bin") && !exists(dir + "/mirror/backup"))
        }
    }

    // MARK: Point 17: a file a link replaces is kept

    @Test func aBackupDirKeepsAFileALinkItemReplaces() async throws {
        try await withTestDirectory { dir in
            let file = "  - {url: \(server.url("/rel/file00.bin")), dest: a.bin, sha256: \(sha(files["file00.bin"]!))}\n"
            let current = "  - {url: \(server.url("/rel/file01.bin")), dest: current, sha256: \(sha(files["file01.bin"]!))}\n"
            let path = write("version: 1\nroot: mirror\nitems:\n" + file + current, to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            write("version: 1\nroot: mirror\nitems:\n" + file + "  - {link: a.bin, dest: current}\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--backup-dir", dir + "/backup", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/mirror/current")) == "a.bin")
            let runs = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/backup")) ?? []
            try #require(runs.count == 1, "\(runs)")
            #expect(fileSHA(dir + "/backup/" + runs[0] + "/current") == sha(files["file01.bin"]!))
        }
    }
}

/// `--max-delete`'s verdict as pure arithmetic: a set over the share fails alone.
@Suite struct DeleteVerdictTests {
    func items(_ dests: [String]) throws -> [PlannedItem] {
        let yaml = "version: 1\nitems:\n" + dests.map { "  - {url: http://127.0.0.1:9/x, dest: \($0)}\n" }.joined()
        return Plan(manifest: try Manifest.parse(yaml, name: "m.yaml")).items
    }

    @Test func aSetOverTheShareIsShrunkAndTheRestIsJudgedWithoutIt() throws {
        let kept = try items((0..<5).map { "rel/k\($0)" } + (0..<10).map { "other/k\($0)" })
        let files = (0..<25).map { Prune.File(path: "rel/d\($0)", size: 1) } + [Prune.File(path: "other/stray", size: 1)]
        let verdict = DeleteLimits().verdict(
            deleting: files, items: kept, setFolders: ["rel/", "other/"], lists: ["rel/": "http://u:p@h/SUMS"])
        #expect(verdict.refusal == nil)
        #expect(verdict.shrunk.map(\.folder) == ["rel/"])
        #expect(verdict.shrunk.first?.message.contains("now names 5 files") == true)
        #expect(verdict.shrunk.first?.message.contains("u:p") == false)
        var limits = DeleteLimits()
        limits.count = 0
        #expect(limits.verdict(deleting: files, items: kept, setFolders: ["rel/", "other/"]).refusal != nil)
        // Without sets, the root's share refuses the run as a whole.
        #expect(DeleteLimits().verdict(deleting: files, items: kept, setFolders: []).refusal?.contains("under the root") == true)
    }
}
