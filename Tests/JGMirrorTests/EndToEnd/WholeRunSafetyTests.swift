import Foundation
import TestServer
import Testing

@testable import JGMirror

/// What a run decides about the whole tree (docs/deletions.md, docs/sync.md#failed-lists), through
/// the built binary against a server on loopback, as cron runs it: only a clean run deletes, within
/// `--max-delete`; a list's failure stays with its set; `--backup-dir` keeps what
/// goes.
@Suite struct WholeRunSafetyTests {
    let server: TestServer
    /// name → body, each served at `/f/NAME` and `/rel/NAME`.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        files = serveThirtyFiles(on: server, at: ["/f/", "/rel/"], size: 3000, step: 97, seed: 3000)
    }

    var names: [String] { files.keys.sorted() }

    /// A manifest of `names` as items under `prefix` in `root: mirror`.
    func itemsManifest(_ names: [String], prefix: String = "") -> String {
        var text = "version: 1\nroot: mirror\nitems:\n"
        for name in names {
            text += "  - {url: \(server.url("/f/" + name)), dest: \(prefix)\(name), sha256: \(sha(files[name]!))}\n"
        }
        return text
    }

    /// A SHA256SUMS list of `names`.
    func sums(_ names: [String]) -> String {
        names.map { sha(files[$0]!) + "  " + $0 }.joined(separator: "\n") + "\n"
    }

    /// The regular files under `root`, outside `.jgmirror`, relative and sorted.
    func tree(_ root: String) -> [String] {
        let all = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        return all.filter { path in
            var isFolder: ObjCBool = false
            return !path.hasPrefix(".jgmirror")
                && FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder)
                && !isFolder.boolValue
        }.sorted()
    }

    func items(_ report: [String: Any]) -> [[String: Any]] { report["items"] as? [[String: Any]] ?? [] }

    // MARK: Deleting only what a clean run proves

    /// A templating mistake that empties the manifest must not empty the mirror.
    @Test(arguments: ["items: []\n", "sets: []\n", "items: []\nsets: []\n"])
    func aManifestThatNamesNoItemRefusesDelete(emptied: String) async throws {
        try await withTestDirectory { dir in
            let chosen = Array(names.prefix(5))
            let path = write(itemsManifest(chosen), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            write("version: 1\nroot: mirror\n" + emptied, to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--delete", "--progress", "none"])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("names no item would delete every file under the root"), "\(run.stderr)")
            #expect(tree(dir + "/mirror") == chosen)
        }
    }

    /// `current -> releases/v2`: items written through the link fail `unsafe_path`, and
    /// the files behind it, which no item names now, stay.
    @Test func aRunWithFailedItemsDeletesNothingAndSaysWhy() async throws {
        try await withTestDirectory { dir in
            let chosen = Array(names.prefix(3))
            let path = write(itemsManifest(chosen, prefix: "releases/v2/"), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            try FileManager.default.createSymbolicLink(atPath: dir + "/mirror/current", withDestinationPath: "releases/v2")
            write(itemsManifest(chosen, prefix: "current/"), to: "m.yaml", in: dir)
            let run = try await execute(
                ["sync", path, "--delete", "--max-delete", "100%", "--report", dir + "/r.json", "--progress", "none"])
            #expect(run.status == 4, "\(run.stderr)")
            let rows = items(try loadReport(dir + "/r.json"))
            #expect(rows.filter { code($0) == "unsafe_path" }.count == 3)
            let skipped = rows.filter { $0["status"] as? String == "delete_skipped" }
            #expect(skipped.map { $0["dest"] as? String ?? "" }.sorted() == chosen.map { "releases/v2/" + $0 })
            #expect(skipped.allSatisfy { code($0) == "delete_skipped" })
            let reason = (skipped.first?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(reason.contains("3 items did not succeed"), "\(reason)")
            #expect(try loadReport(dir + "/r.json")["totals"].map { ($0 as? [String: Any])?["delete_skipped"] as? Int } == 3)
            for name in chosen { #expect(fileSHA(dir + "/mirror/releases/v2/" + name) == sha(files[name]!)) }
        }
    }

    @Test(arguments: ["150%", "-1", "ten", "5%%"])
    func aMaxDeleteThatIsNeitherACountNorAShareIsAUsageError(value: String) async throws {
        try await withTestDirectory { dir in
            let path = write(itemsManifest(["file00.bin"]), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--delete", "--max-delete", value])
            #expect(run.status == 2, "\(run.stderr)")
            // "-1" reads as an option to the argument parser, which refuses it in its own words.
            if value != "-1" { #expect(run.stderr.contains("--max-delete takes a count"), "\(run.stderr)") }
            #expect(server.requests().isEmpty)
        }
    }

    // MARK: A list's failure belongs to its set

    /// One list cut mid-line, or missing, fails its own set in one report row and one
    /// line; the good set is mirrored, and nothing is deleted.
    @Test(arguments: [true, false])
    func aBadListFailsOnlyItsSet(missing: Bool) async throws {
        server.set("/good/SHA256SUMS", TestServer.Route(body: Array(sums(["file00.bin", "file01.bin"]).utf8)))
        server.set("/good/file00.bin", TestServer.Route(body: files["file00.bin"]!))
        server.set("/good/file01.bin", TestServer.Route(body: files["file01.bin"]!))
        if !missing {
            let cut = sums(["file02.bin", "file03.bin"]).prefix(90)
            server.set("/bad/SHA256SUMS", TestServer.Route(body: Array(cut.utf8)))
        }
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                root: mirror
                sets:
                  - {sums: \(server.url("/good/SHA256SUMS")), dest: good/}
                  - {sums: \(server.url("/bad/SHA256SUMS")), dest: bad/}
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            write("stray", to: "mirror/old.bin", in: dir)
            let run = try await execute(["sync", path, "--delete", "--report", dir + "/r.json", "--progress", "none"])
            #expect(run.status == 1, "\(run.stderr)")
            let rows = items(try loadReport(dir + "/r.json"))
            let list = try #require(rows.first { $0["dest"] as? String == "bad/" })
            #expect(list["status"] as? String == "failed" && code(list) == "list")
            #expect(list["url"] as? String == server.url("/bad/SHA256SUMS"))
            #expect(rows.filter { $0["status"] as? String == "downloaded" }.count == 2)
            #expect(rows.first { $0["dest"] as? String == "old.bin" }?["status"] as? String == "delete_skipped")
            #expect(fileSHA(dir + "/mirror/good/file00.bin") == sha(files["file00.bin"]!))
            #expect(exists(dir + "/mirror/old.bin"))
            // One line for the list, not one per item, and no manifest place: the manifest is fine.
            let lines = run.stderr.split(separator: "\n").filter { $0.contains("/bad/SHA256SUMS") }
            #expect(lines.count == 1, "\(run.stderr)")
            #expect(!run.stderr.contains("m.yaml:"), "\(run.stderr)")
        }
    }

    /// A `checksums:` list naming one file twice with two hashes cannot say which is
    /// meant: the list fails, and the items it would have given a hash to.
    @Test func aChecksumsListNamingAFileTwiceWithTwoHashesFails() async throws {
        let other = String(repeating: "0", count: 64)
        let text = sums(["file00.bin"]) + "\(other)  file00.bin\n"
        server.set("/f/SHA256SUMS", TestServer.Route(body: Array(text.utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                root: mirror
                checksums:
                  - url: \(server.url("/f/SHA256SUMS"))
                items:
                  - {url: \(server.url("/f/file00.bin")), dest: a.bin}
                """
            let run = try await execute([
                "sync", write(yaml, to: "m.yaml", in: dir), "--report", dir + "/r.json", "--progress", "none",
            ])
            #expect(run.status == 1, "\(run.stderr)")
            #expect(run.stderr.contains("line 2: 'file00.bin' is listed again with another hash (line 1)"), "\(run.stderr)")
            let rows = items(try loadReport(dir + "/r.json"))
            #expect(rows.first { $0["dest"] as? String == "a.bin" }.map(code) == "list")
            #expect(!exists(dir + "/mirror/a.bin"))
            #expect(server.requests("/f/file00.bin").isEmpty)
        }
    }

    // MARK: Signed lists

    /// A list rewritten upstream under its old ETag answers `304`: the cached copy fails
    /// the new signature, so the list is fetched once more, unconditionally, and the
    /// run goes on with what the server really has.
    @Test func aCachedListThatFailsItsSignatureIsFetchedAgain() async throws {
        try await withKeys { keys in
            let first = sums(["file00.bin", "file01.bin"])
            server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(first.utf8), etag: "\"same\""))
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(first, with: keys.trusted)))
            try await withTestDirectory { dir in
                let yaml = """
                    version: 1
                    root: mirror
                    sets:
                      - sums: \(server.url("/rel/SHA256SUMS"))
                        signature: \(server.url("/rel/SHA256SUMS.gpg"))
                        keyring: \(keys.keyring)
                    """
                let path = write(yaml, to: "m.yaml", in: dir)
                #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
                let second = sums(["file00.bin", "file01.bin", "file02.bin"])
                server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(second.utf8), etag: "\"same\""))
                server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(second, with: keys.trusted)))
                let before = server.requests("/rel/SHA256SUMS").count
                let run = try await execute(["sync", path, "--progress", "none"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(fileSHA(dir + "/mirror/file02.bin") == sha(files["file02.bin"]!))
                let asked = server.requests("/rel/SHA256SUMS").dropFirst(before).map { $0.headers["if-none-match"] }
                #expect(asked == ["\"same\"", nil], "\(asked)")
            }
        }
    }

    /// `gpg --export --armor` makes a keyring gpgv cannot read; jgmirror dearmors it.
    @Test func anArmoredKeyringIsDearmored() async throws {
        try await withKeys { keys in
            let text = sums(["file00.bin"])
            server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(text.utf8)))
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let armored = dir + "/keys.asc"
                try keys.gpg(["--armor", "--output", armored, "--export", keys.trusted])
                let binary = try Data(contentsOf: URL(fileURLWithPath: keys.keyring))
                #expect(try Keyring.dearmor(Data(contentsOf: URL(fileURLWithPath: armored))) == binary)
                let yaml = """
                    version: 1
                    root: mirror
                    sets:
                      - sums: \(server.url("/rel/SHA256SUMS"))
                        signature: \(server.url("/rel/SHA256SUMS.gpg"))
                        keyring: \(armored)
                    """
                let run = try await execute(["sync", write(yaml, to: "m.yaml", in: dir), "--progress", "none"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(fileSHA(dir + "/mirror/file00.bin") == sha(files["file00.bin"]!))
                // A damaged armored keyring is refused at plan time, naming the way out.
                var damaged = try String(contentsOfFile: armored, encoding: .utf8)
                let body = try #require(damaged.range(of: "\n\n"))
                damaged.insert(contentsOf: "AAAA", at: body.upperBound)
                try damaged.write(toFile: armored, atomically: true, encoding: .utf8)
                let refused = try await execute(["plan", dir + "/m.yaml"])
                #expect(refused.status == 2 && refused.stderr.contains("m.yaml:6:14: keyring"), "\(refused.stderr)")
                #expect(refused.stderr.contains("gpg --dearmor"), "\(refused.stderr)")
            }
        }
    }

    // MARK: --backup-dir

    @Test func backupDirKeepsWhatIsDeletedAndWhatIsReplaced() async throws {
        try await withTestDirectory { dir in
            let path = write(itemsManifest(["file00.bin", "file01.bin"]), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--progress", "none"]).status == 0)
            write("stray", to: "mirror/old/stray.txt", in: dir)
            // file00.bin changes upstream, and the manifest with it.
            let changed = TestServer.bytes(count: 5000, seed: 99)
            server.set("/f/file00.bin", TestServer.Route(body: changed))
            let yaml = itemsManifest(["file00.bin", "file01.bin"]).replacingOccurrences(
                of: sha(files["file00.bin"]!), with: sha(changed))
            write(yaml, to: "m.yaml", in: dir)
            let run = try await execute([
                "sync", path, "--delete", "--max-delete", "100%", "--backup-dir", dir + "/backup", "--progress", "none",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let runs = try FileManager.default.contentsOfDirectory(atPath: dir + "/backup")
            try #require(runs.count == 1, "\(runs)")
            #expect(runs[0].count == "20261127T031500Z".count && runs[0].hasSuffix("Z"), "\(runs)")
            let kept = dir + "/backup/" + runs[0]
            #expect(tree(kept) == ["file00.bin", "old/stray.txt"])
            #expect(fileSHA(kept + "/file00.bin") == sha(files["file00.bin"]!))
            #expect(fileSHA(dir + "/mirror/file00.bin") == sha(changed))
            #expect(tree(dir + "/mirror") == ["file00.bin", "file01.bin"])
            // A run that keeps nothing leaves no empty folder behind.
            #expect(try await execute(["sync", path, "--backup-dir", dir + "/backup", "--progress", "none"]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/backup").count == 1)
        }
    }

    /// A kill at any moment of a prune into `--backup-dir` leaves each file in the
    /// tree or in the backup, never in neither (and never half in either).
    @Test func aKilledPruneWithABackupLosesNoFile() async throws {
        try await withTestDirectory { dir in
            let path = write(itemsManifest(["file00.bin"]), to: "m.yaml", in: dir)
            var strays: [String: String] = [:]
            for index in 0..<40 {
                let name = "strays/\(index % 4)/s\(index).txt"
                strays[name] = "stray \(index)"
                write(strays[name]!, to: "mirror/" + name, in: dir)
            }
            let arguments = [
                "sync", path, "--delete", "--max-delete", "100%", "--backup-dir", dir + "/backup", "--progress", "none",
            ]
            func check() throws {
                let backups = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/backup")) ?? []
                for (name, text) in strays {
                    var places = exists(dir + "/mirror/" + name) ? [dir + "/mirror/" + name] : []
                    places += backups.map { dir + "/backup/" + $0 + "/" + name }.filter(exists)
                    #expect(places.count == 1, "\(name): \(places)")
                    for place in places { #expect(try String(contentsOfFile: place, encoding: .utf8) == text) }
                }
            }
            for deletions in [1, 3, 9, 17] {
                let run = try await execute(arguments, environment: ["JGMIRROR_TEST_CRASH_AFTER_DELETIONS": String(deletions)])
                // Killed: `terminationStatus` is the signal's number.
                #expect(run.status == SIGKILL, "\(run.status) \(run.stderr)")
                try check()
            }
            #expect(try await execute(arguments).status == 0)
            try check()
            #expect(tree(dir + "/mirror") == ["file00.bin"])
        }
    }

    @Test func aBackupDirOnAnotherFileSystemIsAUsageError() async throws {
        // /dev/shm is a tmpfs wherever it exists; the test folder is elsewhere.
        var shm = stat()
        var temporary = stat()
        guard stat("/dev/shm", &shm) == 0, stat(FileManager.default.temporaryDirectory.path, &temporary) == 0,
            shm.st_dev != temporary.st_dev
        else { return }
        try await withTestDirectory { dir in
            let path = write(itemsManifest(["file00.bin"]), to: "m.yaml", in: dir)
            let backup = "/dev/shm/jgmirror-test-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: backup) }
            let run = try await execute(["sync", path, "--backup-dir", backup, "--progress", "none"])
            #expect(run.status == 2 && run.stderr.contains("is on another file system than the root"), "\(run.stderr)")
            #expect(server.requests().isEmpty)
        }
    }
}

/// `--max-delete`'s limits as pure arithmetic.
@Suite struct DeleteLimitsTests {
    @Test func eachValueSetsItsOwnLimit() throws {
        #expect(try DeleteLimits(parsing: []) == DeleteLimits())
        let both = try DeleteLimits(parsing: ["10%", "5000"])
        #expect(both.count == 5000 && both.share == 0.1)
        #expect(try DeleteLimits(parsing: ["0"]).share == 0.5)
        #expect(throws: UsageError.self) { try DeleteLimits(parsing: ["100.5%"]) }
    }
}
