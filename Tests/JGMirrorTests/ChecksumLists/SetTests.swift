import Foundation
import JGMirror
import TestServer
import Testing

/// `sets:` (docs/manifest.md#sets): a checksums list served by the test server becomes items.
@Suite struct SetTests: SetSuite {
    let server: TestServer
    /// name → body, as the release folder `/rel/` serves them.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        files = Self.serveRelease(on: server)
    }

    @Test func includeAndExcludePickListedNamesAndEachLandsUnderDest() async throws {
        serveSums(sums(["a.iso", "b.img", "notes.txt", "sub/c.iso", "with space.iso"]))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    dest: release/24.04/
                    include: ["*.iso", "*.img"]
                    exclude: ["sub/*"]
                    connections: 2
                    tags: [rel]
                """
            let report = try await syncSets(yaml, in: dir)
            #expect(report.exitCode == .success)
            #expect(
                Set(report.items.map(\.dest)) == ["release/24.04/a.iso", "release/24.04/b.img", "release/24.04/with space.iso"])
            #expect(report.items.allSatisfy { $0.status == .downloaded && $0.tags == ["rel"] })
            for name in ["a.iso", "b.img", "with space.iso"] {
                #expect(fileSHA(dir + "/mirror/release/24.04/" + name) == sha(files[name]!))
            }
            #expect(!exists(dir + "/mirror/release/24.04/notes.txt") && !exists(dir + "/mirror/release/24.04/sub"))
            #expect(server.requests("/rel/SHA256SUMS").count == 1)
        }
    }

    @Test func listedHashIsEnforced() async throws {
        var text = sums(["a.iso"])
        text = text.replacingOccurrences(of: sha(files["a.iso"]!), with: sha(files["b.img"]!))
        serveSums(text)
        try await withTestDirectory { dir in
            let report = try await syncSets("version: 1\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n", in: dir)
            #expect(report.exitCode == .integrity)
            #expect(report.items.first?.status == .mismatch)
        }
    }

    @Test func mirrorsBaseGivesEachItemItsMirrorURL() async throws {
        serveSums(sums(["a.iso", "sub/c.iso"]))
        server.set("/rel/a.iso", TestServer.Route(body: Array("gone".utf8)))
        server.update("/rel/a.iso") { $0.fault = { _ in .status(404) } }
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    mirrors_base: [\(server.url("/mirror"))]
                """
            let report = try await syncSets(yaml, in: dir)
            #expect(report.exitCode == .success)
            #expect(fileSHA(dir + "/mirror/a.iso") == sha(files["a.iso"]!))
            #expect(fileSHA(dir + "/mirror/sub/c.iso") == sha(files["sub/c.iso"]!))
            #expect(server.requests("/mirror/a.iso").count >= 1)
        }
    }

    @Test(arguments: ["../escape.iso", "/etc/escape.iso", "sub/../../escape.iso"])
    func nameLeavingTheSetIsRefusedWithTheLine(name: String) async throws {
        serveSums(sums(["a.iso"], extra: [String(repeating: "ab", count: 32) + "  " + name]))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: rel/\n", to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"])
            // The list's fault, not the manifest's: its set fails alone
            // (docs/sync.md#failed-lists).
            #expect(run.status == 1)
            #expect(
                run.stderr.contains("\(server.url("/rel/SHA256SUMS")) line 4: '\(name)' leaves the set's folder"), "\(run.stderr)"
            )
            #expect(fileRequests().isEmpty)
        }
    }

    @Test func anItemAndASetNamingOneDestinationIsAnError() async throws {
        serveSums(sums(["a.iso", "b.img"]))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    dest: rel
                items:
                  - url: \(server.url("/mirror/b.img"))
                    dest: rel/b.img
                """
            let run = try await execute(["sync", write(yaml, to: "m.yaml", in: dir), "--progress", "none"])
            // The set fails; the manifest's own item goes on.
            #expect(run.status == 1)
            #expect(run.stderr.contains("line 4: destination 'rel/b.img' is also the item at line 6"), "\(run.stderr)")
            #expect(Set(fileRequests()) == ["/mirror/b.img"])
        }
    }

    /// A listed file where another item's file has its folder, or a listed folder
    /// where another item has its file, is refused before any request, as between
    /// the manifest's own items; so is a listed name that ends in `/`.
    @Test(arguments: [
        (
            "rel/", ["a.iso"], "  - {url: URL, dest: rel/a.iso/x}\n",
            "line 3: destination 'rel/a.iso' is a folder of another item's destination"
        ),
        (
            "rel/", ["a.iso"], "  - {url: URL, dest: rel}\n",
            "line 3: destination 'rel/a.iso' lies inside 'rel', the file of the item at line 6"
        ),
        (
            "rel/", ["sub/c.iso"], "  - {url: URL, dest: rel/sub}\n",
            "line 3: destination 'rel/sub/c.iso' lies inside 'rel/sub', the file of the item at line 6"
        ),
        (
            "rel/", ["sub", "sub/c.iso"], "",
            "line 4: destination 'rel/sub/c.iso' lies inside 'rel/sub', the file listed by"
        ),
        (
            "rel/", ["sub/c.iso", "sub"], "",
            "line 4: destination 'rel/sub' is a folder of another item's destination"
        ),
        (
            "rel//", ["a.iso", "sub/"], "",
            "line 4: 'sub/' names a folder; a listed name must be a file"
        ),
        ("rel/", ["sub/."], "", "line 3: 'sub/.' names a folder; a listed name must be a file"),
        ("/", ["a.iso"], "", "m.yaml:4:11: destination '/' is absolute"),
    ])
    func aListedNameThatCollidesWithAFolderOrFileIsRefused(
        dest: String, names: [String], items: String, expected: String
    ) async throws {
        serveSums(sums(names))
        try await withTestDirectory { dir in
            let yaml =
                "version: 1\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: \(dest)\n"
                + (items.isEmpty ? "" : "items:\n" + items.replacingOccurrences(of: "URL", with: server.url("/mirror/x")))
            let run = try await execute(["plan", write(yaml, to: "m.yaml", in: dir)])
            // A bad `dest:` is the manifest's mistake (2); a bad listed name fails the set (1).
            #expect(run.status == (dest == "/" ? 2 : 1))
            #expect(run.stderr.contains(expected), "\(run.stderr)")
            #expect(fileRequests().isEmpty)
        }
    }

    @Test func aSetFolderWithDoubledSlashesIsTheFolder() async throws {
        serveSums(sums(["a.iso"]))
        try await withTestDirectory { dir in
            for dest in ["rel//", "./rel//", "rel///"] {
                let yaml = "version: 1\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: \(dest)\n"
                let run = try await execute(["plan", write(yaml, to: "m.yaml", in: dir)])
                #expect(run.status == 0, "\(dest): \(run.stderr)")
                #expect(run.stdout.contains("rel/a.iso"), "\(dest): \(run.stdout)")
            }
        }
    }

    @Test func planShowsTheExpandedItemsAndTagAndShardSelectAmongThem() async throws {
        serveSums(sums(["a.iso", "b.img", "notes.txt"]))
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let yaml = """
                version: 1
                sets:
                  - sums: \(server.url("/rel/SHA256SUMS"))
                    dest: rel/
                    tags: [rel]
                items:
                  - url: \(server.url("/mirror/sub/c.iso"))
                    dest: other/c.iso
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let plan = try await execute(["plan", path])
            #expect(plan.status == 0)
            for dest in ["rel/a.iso", "rel/b.img", "rel/notes.txt", "other/c.iso"] { #expect(plan.stdout.contains(dest)) }
            #expect(plan.stdout.contains(server.url("/rel/notes.txt")))
            #expect(fileRequests().isEmpty)

            let tagged = try await execute(["sync", path, "--tag", "rel", "--report", out + "/r.json", "--progress", "none"])
            #expect(tagged.status == 0)
            let items = try #require(try loadReport(out + "/r.json")["items"] as? [[String: Any]])
            #expect(Set(items.compactMap { $0["dest"] as? String }) == ["rel/a.iso", "rel/b.img", "rel/notes.txt"])

            // Every expanded item is in exactly one of two shards.
            var outputs: [String] = []
            for index in 0..<2 { outputs.append(try await execute(["plan", path, "--shard", "\(index)/2"]).stdout) }
            for dest in ["rel/a.iso", "rel/b.img", "rel/notes.txt", "other/c.iso"] {
                #expect(outputs.filter { $0.contains(" \(dest) ") }.count == 1, "\(dest)")
            }
        }
    }

    // MARK: --delete

    @Test func deleteKeepsWhatTheListNamesAndRemovesWhatItNoLongerDoes() async throws {
        serveSums(sums(["a.iso", "b.img", "notes.txt"]))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nroot: mirror\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: rel/\n", to: "m.yaml",
                in: dir)
            write("stray", to: "mirror/rel/stray.txt", in: dir)
            let first = try await execute(["sync", path, "--delete", "--report", dir + "/r1.json", "--progress", "none"])
            #expect(first.status == 0, "\(first.stderr)")
            let firstItems = try #require(try loadReport(dir + "/r1.json")["items"] as? [[String: Any]])
            #expect(firstItems.first { $0["dest"] as? String == "rel/stray.txt" }?["status"] as? String == "deleted")
            #expect(!exists(dir + "/mirror/rel/stray.txt"))
            // SQLite's -wal and -shm come and go with its connections.
            func stateFiles() throws -> [String] {
                try FileManager.default.subpathsOfDirectory(atPath: dir + "/mirror/.jgmirror").filter {
                    !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm")
                }.sorted()
            }
            let state = try stateFiles()
            #expect(state.contains("state.sqlite") && state.contains { $0.hasPrefix("lists/") })

            // The next release no longer lists notes.txt.
            serveSums(sums(["a.iso", "b.img"]))
            let second = try await execute(["sync", path, "--delete", "--report", dir + "/r2.json", "--progress", "none"])
            #expect(second.status == 0, "\(second.stderr)")
            let items = try #require(try loadReport(dir + "/r2.json")["items"] as? [[String: Any]])
            let statuses = Dictionary(
                items.map { ($0["dest"] as? String ?? "?", $0["status"] as? String ?? "?") }, uniquingKeysWith: { "\($0), \($1)" }
            )
            #expect(statuses == ["rel/a.iso": "unchanged", "rel/b.img": "unchanged", "rel/notes.txt": "deleted"])
            #expect(!exists(dir + "/mirror/rel/notes.txt"))
            for name in ["a.iso", "b.img"] { #expect(fileSHA(dir + "/mirror/rel/" + name) == sha(files[name]!)) }
            #expect(try stateFiles() == state)

            // An empty answer (a cut upload, a broken mirror) is not a release with no
            // files: the set fails (exit 1) and nothing is deleted. So do filters matching nothing.
            serveSums("# nothing here\n")
            let empty = try await execute(["sync", path, "--delete", "--progress", "none"])
            #expect(empty.status == 1 && empty.stderr.contains("SHA256SUMS lists no file"), "\(empty.stderr)")
            serveSums(sums(["a.iso", "b.img"]))
            let filtered = path.replacingOccurrences(of: "m.yaml", with: "f.yaml")
            try String(contentsOfFile: path, encoding: .utf8).appending("    include: ['*.zip']\n").write(
                toFile: filtered, atomically: true, encoding: .utf8)
            let none = try await execute(["sync", filtered, "--delete", "--progress", "none"])
            #expect(
                none.status == 1 && none.stderr.contains("lists 2 files, and include/exclude leave none of them"),
                "\(none.stderr)")
            for name in ["a.iso", "b.img"] { #expect(fileSHA(dir + "/mirror/rel/" + name) == sha(files[name]!)) }
        }
    }

    @Test func deleteWithASetUnderATagFilterIsAUsageError() async throws {
        serveSums(sums(["a.iso"]))
        try await withTestDirectory { dir in
            let path = write(
                "version: 1\nroot: mirror\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    tags: [rel]\n", to: "m.yaml",
                in: dir)
            write("stray", to: "mirror/stray.txt", in: dir)
            for filter in [["--tag", "rel"], ["--skip-tag", "x"], ["--shard", "0/2"]] {
                let run = try await execute(["sync", path, "--delete", "--progress", "none"] + filter)
                #expect(run.status == 2, "\(filter): \(run.stderr)")
                #expect(run.stderr.contains("--delete cannot be combined with --shard, --tag or --skip-tag"), "\(filter)")
            }
            #expect(exists(dir + "/mirror/stray.txt"))
            #expect(server.requests().isEmpty)
        }
    }
}
