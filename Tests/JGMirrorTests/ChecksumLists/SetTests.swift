import Foundation
import JGMirror
import TestServer
import Testing

/// `sets:` (docs/manifest.md#sets): a checksums list served by the test server becomes items.
@Suite struct SetTests {
    let server: TestServer
    /// name → body, as the release folder `/rel/` serves them.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        var files: [String: [UInt8]] = [:]
        for (index, name) in ["a.iso", "b.img", "notes.txt", "sub/c.iso", "with space.iso"].enumerated() {
            files[name] = TestServer.bytes(count: 40_000 + index * 777, seed: UInt64(700 + index))
        }
        self.files = files
        for (name, body) in files {
            let encoded = name.replacingOccurrences(of: " ", with: "%20")
            server.set("/rel/" + encoded, TestServer.Route(body: body))
            server.set("/mirror/" + encoded, TestServer.Route(body: body))
        }
    }

    /// The list as coreutils writes it, both separators, a comment and a blank line.
    func sums(_ names: [String], extra: [String] = []) -> String {
        var lines = ["# release files", ""]
        for (index, name) in names.enumerated() {
            lines.append(sha(files[name] ?? []) + (index % 2 == 0 ? "  " : " *") + name)
        }
        return (lines + extra).joined(separator: "\n") + "\n"
    }

    func serveSums(_ text: String, at path: String = "/rel/SHA256SUMS") {
        server.set(path, TestServer.Route(body: Array(text.utf8)))
    }

    /// Loads and syncs `yaml` into `dir/mirror`; the run reads the sets' lists.
    func syncSets(_ yaml: String, in dir: String, planOptions: PlanOptions = PlanOptions()) async throws -> RunReport {
        let manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
        var options = planOptions
        options.root = dir + "/mirror"
        return try await SyncSession(plan: Plan(manifest: manifest, options: options), options: testOptions()).run()
    }

    func fileRequests() -> [String] {
        server.requests().map(\.path).filter { !$0.hasSuffix("SUMS") && !$0.hasSuffix(".gpg") }
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

    // MARK: Signed lists

    @Test func goodSignatureIsAccepted() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .success)
                #expect(report.items.count == 2 && report.items.allSatisfy { $0.status == .downloaded })
            }
        }
    }

    @Test func tamperedListFailsEveryItemWithSignatureAndFetchesNothing() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            serveSums(text.replacingOccurrences(of: "b.img", with: "notes.txt"))
            try await withTestDirectory { dir in
                let out = outputs(beside: dir)
                let path = write(signedSet(keyring: keys.keyring), to: "m.yaml", in: dir)
                let run = try await execute(["sync", path, "--report", out + "/r.json", "--progress", "none"])
                #expect(run.status == 3)
                let items = try #require(try loadReport(out + "/r.json")["items"] as? [[String: Any]])
                #expect(items.count == 2)
                for item in items {
                    #expect(item["status"] as? String == "failed")
                    #expect((item["error"] as? [String: Any])?["code"] as? String == "signature")
                }
                #expect(((items.first?["error"] as? [String: Any])?["message"] as? String)?.contains("BAD signature") == true)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    /// A list whose signature fails decides nothing: cut, it does not make `--delete`
    /// remove what it leaves out; empty, its set fails with `signature`.
    @Test func aListWhoseSignatureFailsDeletesNothing() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let yaml = signedSet(keyring: keys.keyring).replacingOccurrences(
                    of: "version: 1\n", with: "version: 1\nroot: mirror\n")
                let path = write(yaml, to: "m.yaml", in: dir)
                #expect(try await execute(["sync", path, "--delete", "--progress", "none"]).status == 0)
                let root = dir + "/mirror/"
                let placed = try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }
                    .sorted()
                // Someone cuts the list and cannot sign it.
                serveSums(sums(["a.iso"]))
                let cut = try await execute(["sync", path, "--delete", "--progress", "none"])
                #expect(cut.status == 3, "\(cut.stderr)")
                #expect(
                    try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }.sorted()
                        == placed)
                serveSums("")
                let empty = try await execute(["sync", path, "--delete", "--progress", "none"])
                #expect(empty.status == 3 && empty.stderr.contains("SHA256SUMS names no file, and"), "\(empty.stderr)")
                let plan = try await execute(["plan", path, "--delete"])
                #expect(!plan.stdout.contains("delete "), "\(plan.stdout)")
                #expect(
                    try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }.sorted()
                        == placed)
            }
        }
    }

    @Test func signatureByAKeyOutsideTheKeyringIsRefused() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.stranger)))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first?.error?.code == .signature)
                #expect(report.items.first?.error?.message.contains("No public key") == true)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    @Test func missingSignatureFailsTheList() async throws {
        try await withKeys { keys in
            serveSums(sums(["a.iso"]))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first?.error?.code == .signature)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    @Test func signedChecksumsEntryFailsTheItemsItCovers() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso"])
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.stranger)))
            serveSums(text)
            try await withTestDirectory { dir in
                let yaml = """
                    version: 1
                    checksums:
                      - url: \(server.url("/rel/SHA256SUMS"))
                        signature: \(server.url("/rel/SHA256SUMS.gpg"))
                        keyring: \(keys.keyring)
                    items:
                      - url: \(server.url("/rel/a.iso"))
                      - url: \(server.url("/mirror/b.img"))
                    """
                let report = try await sync(yaml, in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first { $0.dest == "a.iso" }?.error?.code == .signature)
                #expect(report.items.first { $0.dest == "b.img" }?.status == .unverified)
                #expect(server.requests("/rel/a.iso").isEmpty)
            }
        }
    }

    @Test func signatureWithoutKeyringIsAManifestError() throws {
        #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nsets:\n  - sums: http://h/SHA256SUMS\n    signature: http://h/SHA256SUMS.gpg\n")
        }
    }

    func signedSet(keyring: String) -> String {
        """
        version: 1
        sets:
          - sums: \(server.url("/rel/SHA256SUMS"))
            signature: \(server.url("/rel/SHA256SUMS.gpg"))
            keyring: \(keyring)
        """
    }
}

/// Two throwaway signing keys in a temporary GnuPG home: `trusted`, exported to
/// `keyring`, and `stranger`, which is not in it.
struct TestKeys {
    let home: String
    let keyring: String
    let trusted = "Trusted Release <trusted@example.invalid>"
    let stranger = "Stranger <stranger@example.invalid>"

    /// A detached binary signature of `text` by `signer`.
    func sign(_ text: String, with signer: String) throws -> [UInt8] {
        let list = home + "/to-sign"
        try Data(text.utf8).write(to: URL(fileURLWithPath: list))
        try gpg(["--yes", "--local-user", signer, "--output", list + ".gpg", "--detach-sign", list])
        return Array(try Data(contentsOf: URL(fileURLWithPath: list + ".gpg")))
    }

    func gpg(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gpg", "--batch", "--quiet", "--homedir", home + "/gnupg"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(
            process.terminationStatus == 0, "gpg \(arguments.joined(separator: " ")) failed (is Debian's gnupg installed?)")
    }
}

/// Makes the keys in a temporary folder, runs `body`, then stops GnuPG's agent and
/// removes everything.
func withKeys(_ body: (TestKeys) async throws -> Void) async throws {
    try await withTestDirectory { dir in
        let keys = TestKeys(home: dir, keyring: dir + "/keyring.gpg")
        try FileManager.default.createDirectory(
            atPath: dir + "/gnupg", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer {
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            stop.arguments = ["gpgconf", "--homedir", dir + "/gnupg", "--kill", "all"]
            try? stop.run()
            stop.waitUntilExit()
        }
        for user in [keys.trusted, keys.stranger] {
            try keys.gpg(["--passphrase", "", "--quick-gen-key", user, "ed25519", "sign", "never"])
        }
        try keys.gpg(["--output", keys.keyring, "--export", keys.trusted])
        try await body(keys)
    }
}

/// SHA-512 of `bytes` by coreutils' `sha512sum`, independent of jgmirror's hasher.
func sha512(_ bytes: [UInt8]) async throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-sha512-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return String(try await runProgram("sha512sum", [path]).stdout.prefix(128))
}

/// `sha512:` on items and SHA512SUMS lists in sets.
@Suite struct SHA512Tests {
    let server: TestServer

    init() throws { server = try TestServer() }

    @Test func itemWithSHA512IsVerifiedThenUnchangedAndAWrongOneIsAMismatch() async throws {
        let body = TestServer.bytes(count: 3 << 20, seed: 512)
        server.set("/big", TestServer.Route(body: body))
        let good = try await sha512(body)
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/big"), extra: "sha512: \(good)\nconnections: 3\nmin_segment: 256KiB")
            let first = try await sync(yaml, in: dir)
            #expect(first.exitCode == .success)
            #expect(first.items.first?.status == .downloaded)
            #expect(first.items.first?.sha512Actual == good && first.items.first?.sha512Expected == good)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            let requests = server.requests().count
            let second = try await sync(yaml, in: dir)
            #expect(second.items.first?.status == .unchanged)
            #expect(server.requests().count == requests)

            let verify = try await execute(["verify", dir + "/manifest.yaml", "--root", dir + "/mirror", "--report", "-"])
            #expect(verify.status == 0)
            #expect(verify.stdout.contains("\"sha512_actual\": \"\(good)\""))
        }
        try await withTestDirectory { dir in
            let wrong = String(good.reversed())
            let report = try await sync(manifest(url: server.url("/big"), extra: "sha512: \(wrong)"), in: dir)
            #expect(report.exitCode == .integrity)
            #expect(report.items.first?.status == .mismatch)
            #expect(report.items.first?.error?.message.contains("SHA-512 is \(good)") == true)
            #expect(!exists(dir + "/mirror/out.bin") && exists(dir + "/mirror/.jgmirror/quarantine/out.bin"))
        }
    }

    @Test func sha256AndSha512TogetherAreRefused() {
        let text =
            "version: 1\nitems:\n  - url: http://h/x\n    sha256: \(String(repeating: "a", count: 64))\n    sha512: \(String(repeating: "b", count: 128))\n"
        #expect(throws: ManifestError.self) { try Manifest.parse(text) }
        #expect(throws: ManifestError.self) { try Manifest.parse("version: 1\nitems:\n  - url: http://h/x\n    sha512: abc\n") }
    }

    @Test func sha512SumsListVerifiesEachFile() async throws {
        let a = TestServer.bytes(count: 50_000, seed: 5120)
        let b = TestServer.bytes(count: 60_000, seed: 5121)
        server.set("/rel/a.iso", TestServer.Route(body: a))
        server.set("/rel/b.iso", TestServer.Route(body: b))
        // b's line carries a's hash: b must fail, a must land.
        let sumA = try await sha512(a)
        let list = "\(sumA)  a.iso\n\(sumA) *b.iso\n"
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array(list.utf8)))
        try await withTestDirectory { dir in
            var manifest = try Manifest.load(
                path: write("version: 1\nsets:\n  - sums: \(server.url("/rel/SHA512SUMS"))\n", to: "m.yaml", in: dir))
            try await manifest.expandSets(options: testOptions())
            var options = PlanOptions()
            options.root = dir + "/mirror"
            let report = try await SyncSession(plan: Plan(manifest: manifest, options: options), options: testOptions()).run()
            #expect(report.items.first { $0.dest == "a.iso" }?.status == .downloaded)
            #expect(report.items.first { $0.dest == "b.iso" }?.status == .mismatch)
            #expect(report.exitCode == .integrity)
            #expect(fileSHA(dir + "/mirror/a.iso") == sha(a))
        }
    }
}

extension SHA512Tests {
    @Test func checksumsEntryWithASHA512SumsListVerifiesItsItems() async throws {
        let body = TestServer.bytes(count: 70_000, seed: 5122)
        server.set("/rel/c.iso", TestServer.Route(body: body))
        server.set("/rel/d.iso", TestServer.Route(body: body))
        let right = try await sha512(body)
        let wrong = String(right.reversed())
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array("\(right)  c.iso\n\(wrong)  d.iso\n".utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(server.url("/rel/SHA512SUMS"))]
                items:
                  - url: \(server.url("/rel/c.iso"))
                  - url: \(server.url("/rel/d.iso"))
                """
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first { $0.dest == "c.iso" }?.status == .downloaded)
            #expect(report.items.first { $0.dest == "c.iso" }?.sha512Expected == right)
            #expect(report.items.first { $0.dest == "d.iso" }?.status == .mismatch)
        }
    }
}

extension SHA512Tests {
    /// Lists can give an item both digests: a wrong SHA-256 is a mismatch even when a
    /// SHA-512 list is right, in sync, in the next sync's look at the file and in verify.
    @Test func aWrongSHA256BesideARightSHA512IsAMismatch() async throws {
        let body = TestServer.bytes(count: 40_000, seed: 5123)
        server.set("/rel/e.iso", TestServer.Route(body: body))
        let right = try await sha512(body)
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array("\(right)  e.iso\n".utf8)))
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array("\(String(sha(body).reversed()))  e.iso\n".utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(server.url("/rel/SHA512SUMS")), \(server.url("/rel/SHA256SUMS"))]
                items:
                  - url: \(server.url("/rel/e.iso"))
                """
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .mismatch && report.exitCode == .integrity, "\(report.items)")
            // The hash came from a list, not the manifest: the message says only what was expected.
            let message = report.items.first?.error?.message ?? ""
            #expect(message.hasPrefix("SHA-256 is \(sha(body)), expected \(String(sha(body).reversed()))"), "\(message)")
            // The right bytes in place, as a run trusting SHA-512 alone would have left them.
            try Data(body).write(to: URL(fileURLWithPath: dir + "/mirror/e.iso"))
            let again = try await sync(yaml, in: dir)
            #expect(again.items.first?.status == .mismatch, "\(again.items)")
            try Data(body).write(to: URL(fileURLWithPath: dir + "/mirror/e.iso"))
            var options = PlanOptions()
            options.root = dir + "/mirror"
            var plan = Plan(manifest: try Manifest.load(path: dir + "/manifest.yaml"), options: options)
            _ = try await plan.applyChecksumLists(options: testOptions())
            let verified = try await Verification.run(plan: plan)
            #expect(verified.items.first?.status == .mismatch && verified.exitCode == .integrity, "\(verified.items)")
        }
    }
}
