import Foundation
import JGMirror
import TestServer
import Testing

/// Checksums lists are fetched conditionally against the copy cached under
/// `ROOT/.jgmirror/lists/` (docs/state.md#lists-and-their-cache): `304` uses the copy, `200`
/// replaces it, a missing or damaged copy costs a whole fetch, and a signed list is checked against
/// the bytes used every run.
@Suite struct ListCacheTests {
    let server: TestServer
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        var files: [String: [UInt8]] = [:]
        for (index, name) in ["a.iso", "b.img", "notes.txt"].enumerated() {
            files[name] = TestServer.bytes(count: 30_000 + index * 501, seed: UInt64(900 + index))
        }
        for (name, body) in files { server.set("/rel/" + name, TestServer.Route(body: body)) }
        self.files = files
    }

    static let lastModified = "Mon, 02 Nov 2026 10:00:00 GMT"

    /// The list of `names`, with `changed` bodies in place of the served ones.
    func sums(_ names: [String], changed: [String: [UInt8]] = [:]) -> String {
        names.map { sha(changed[$0] ?? files[$0]!) + "  " + $0 }.joined(separator: "\n") + "\n"
    }

    /// Serves `text` as the list, with an ETag or (`etag` nil) only a Last-Modified.
    func serveSums(_ text: String, etag: String?) {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(text.utf8), etag: etag, lastModified: Self.lastModified))
    }

    var sumsURL: String { server.url("/rel/SHA256SUMS") }

    func setManifest(in dir: String, signedWith keyring: String? = nil) -> String {
        var yaml = "version: 1\nroot: mirror\nsets:\n  - sums: \(sumsURL)\n"
        if let keyring { yaml += "    signature: \(server.url("/rel/SHA256SUMS.gpg"))\n    keyring: \(keyring)\n" }
        return write(yaml, to: "m.yaml", in: dir)
    }

    /// Runs `jgmirror sync` and returns its exit status and report.
    func runSync(_ manifest: String, in dir: String) async throws -> (status: Int32, items: [[String: Any]]) {
        let run = try await execute(["sync", manifest, "--report", dir + "/r.json", "--progress", "none"])
        let items = try #require(try loadReport(dir + "/r.json")["items"] as? [[String: Any]], "\(run.stderr)")
        return (run.status, items)
    }

    func statuses(_ items: [[String: Any]]) -> [String: String] {
        Dictionary(
            items.map { ($0["dest"] as? String ?? "?", $0["status"] as? String ?? "?") }, uniquingKeysWith: { "\($0), \($1)" })
    }

    func cachePath(in dir: String) -> String {
        dir + "/mirror/.jgmirror/lists/" + sha(Array(sumsURL.utf8))
    }

    /// The requests for the list, with how each was answered.
    func sumsExchanges() -> [(conditions: [String: String], status: Int)] {
        let requests = server.requests("/rel/SHA256SUMS")
        let responses = server.responses("/rel/SHA256SUMS")
        return zip(requests, responses).map { request, response in
            (request.headers.filter { $0.key.hasPrefix("if-") }, response.status)
        }
    }

    func fileRequests() -> [String] {
        server.requests().map(\.path).filter { !$0.hasSuffix("SUMS") && !$0.hasSuffix(".gpg") }
    }

    // MARK: Sets

    @Test(arguments: [true, false])
    func secondSyncAsksConditionallyAndUsesTheCachedListOn304(withETag: Bool) async throws {
        serveSums(sums(["a.iso", "b.img"]), etag: withETag ? "\"v1\"" : nil)
        try await withTestDirectory { dir in
            let manifest = setManifest(in: dir)
            let first = try await runSync(manifest, in: dir)
            #expect(first.status == 0)
            #expect(statuses(first.items) == ["a.iso": "downloaded", "b.img": "downloaded"])

            let second = try await runSync(manifest, in: dir)
            #expect(second.status == 0)
            #expect(statuses(second.items) == ["a.iso": "unchanged", "b.img": "unchanged"])
            let exchanges = sumsExchanges()
            #expect(exchanges.count == 2)
            #expect(exchanges.first?.conditions.isEmpty == true && exchanges.first?.status == 200)
            let expected = withETag ? ["if-none-match": "\"v1\""] : ["if-modified-since": Self.lastModified]
            #expect(exchanges.last?.conditions == expected)
            #expect(exchanges.last?.status == 304)
        }
    }

    @Test func changedListIsFetchedAgainAndReplacesTheCachedCopy() async throws {
        serveSums(sums(["a.iso"]), etag: "\"v1\"")
        try await withTestDirectory { dir in
            let manifest = setManifest(in: dir)
            #expect(try await runSync(manifest, in: dir).status == 0)

            // A new release: a.iso changed, b.img added.
            let newA = TestServer.bytes(count: 31_000, seed: 999)
            server.set("/rel/a.iso", TestServer.Route(body: newA))
            serveSums(sums(["a.iso", "b.img"], changed: ["a.iso": newA]), etag: "\"v2\"")
            let second = try await runSync(manifest, in: dir)
            #expect(second.status == 0)
            #expect(statuses(second.items) == ["a.iso": "downloaded", "b.img": "downloaded"])
            #expect(fileSHA(dir + "/mirror/a.iso") == sha(newA))
            #expect(sumsExchanges().last?.conditions == ["if-none-match": "\"v1\""])
            #expect(sumsExchanges().last?.status == 200)

            let third = try await runSync(manifest, in: dir)
            #expect(third.status == 0)
            #expect(statuses(third.items) == ["a.iso": "unchanged", "b.img": "unchanged"])
            #expect(sumsExchanges().last?.conditions == ["if-none-match": "\"v2\""])
            #expect(sumsExchanges().last?.status == 304)
        }
    }

    enum Damage: String, CaseIterable, Sendable {
        case deleted, garbage, bodyChanged, folderIsASymlink
    }

    @Test(arguments: Damage.allCases)
    func missingOrDamagedCachedCopyCostsAWholeFetch(damage: Damage) async throws {
        serveSums(sums(["a.iso", "b.img"]), etag: "\"v1\"")
        try await withTestDirectory { dir in
            let manifest = setManifest(in: dir)
            #expect(try await runSync(manifest, in: dir).status == 0)
            let cache = cachePath(in: dir)
            let original = try Data(contentsOf: URL(fileURLWithPath: cache))
            switch damage {
            case .deleted: try FileManager.default.removeItem(atPath: cache)
            case .garbage: try Data("not a cached list\n\u{0}\u{1}".utf8).write(to: URL(fileURLWithPath: cache))
            case .bodyChanged:
                // Damage inside the body (the header still parses): b.img listed with a.iso's hash.
                let text = String(decoding: original, as: UTF8.self).replacingOccurrences(
                    of: sha(files["b.img"]!), with: sha(files["a.iso"]!))
                try Data(text.utf8).write(to: URL(fileURLWithPath: cache))
            case .folderIsASymlink:
                let lists = dir + "/mirror/.jgmirror/lists"
                try FileManager.default.moveItem(atPath: lists, toPath: dir + "/elsewhere")
                try FileManager.default.createSymbolicLink(atPath: lists, withDestinationPath: dir + "/elsewhere")
            }
            // The files changed on disk too, so a wrong list would show.
            try FileManager.default.removeItem(atPath: dir + "/mirror/b.img")

            let second = try await runSync(manifest, in: dir)
            #expect(second.status == 0)
            #expect(statuses(second.items) == ["a.iso": "unchanged", "b.img": "downloaded"])
            #expect(fileSHA(dir + "/mirror/b.img") == sha(files["b.img"]!))
            #expect(sumsExchanges().last?.conditions.isEmpty == true)
            #expect(sumsExchanges().last?.status == 200)
            if damage == .folderIsASymlink {
                // Never written through the symlink, and the report says the copy was not kept.
                #expect(
                    try Data(contentsOf: URL(fileURLWithPath: dir + "/elsewhere/" + Paths.lastComponent(of: cache))) == original)
                let report = try loadReport(dir + "/r.json")
                #expect((report["warnings"] as? [String])?.contains { $0.contains("cannot cache the list") } == true)
            } else {
                // The copy is whole again: the next run gets a 304.
                #expect(try Data(contentsOf: URL(fileURLWithPath: cache)) == original)
                #expect(try await runSync(manifest, in: dir).status == 0)
                #expect(sumsExchanges().last?.status == 304)
            }
        }
    }

    @Test func planAndVerifyUseTheCachedCopyButNeverWriteIt() async throws {
        serveSums(sums(["a.iso", "b.img"]), etag: "\"v1\"")
        try await withTestDirectory { dir in
            let manifest = setManifest(in: dir)
            let plan = try await execute(["plan", manifest])
            #expect(plan.status == 0 && plan.stdout.contains("b.img"))
            #expect(!exists(dir + "/mirror"))

            #expect(try await runSync(manifest, in: dir).status == 0)
            let cache = cachePath(in: dir)
            let cached = try Data(contentsOf: URL(fileURLWithPath: cache))
            for command in ["plan", "verify"] {
                let run = try await execute(command == "plan" ? ["plan", manifest] : ["verify", manifest, "--progress", "none"])
                #expect(run.status == 0, "\(command): \(run.stderr)")
                #expect(sumsExchanges().last?.conditions == ["if-none-match": "\"v1\""], "\(command)")
                #expect(sumsExchanges().last?.status == 304, "\(command)")
            }
            // A changed list: plan sees it, but the cached copy stays the sync's.
            serveSums(sums(["a.iso", "b.img", "notes.txt"]), etag: "\"v2\"")
            let changed = try await execute(["plan", manifest])
            #expect(changed.status == 0 && changed.stdout.contains("notes.txt"))
            #expect(sumsExchanges().last?.status == 200)
            #expect(try Data(contentsOf: URL(fileURLWithPath: cache)) == cached)
        }
    }

    // MARK: Signed lists

    @Test func signedListIsCheckedAgainstTheCachedCopyEveryRun() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            serveSums(text, etag: "\"v1\"")
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let manifest = setManifest(in: dir, signedWith: keys.keyring)
                #expect(try await runSync(manifest, in: dir).status == 0)
                let second = try await runSync(manifest, in: dir)
                #expect(second.status == 0)
                #expect(sumsExchanges().last?.status == 304)
                #expect(server.requests("/rel/SHA256SUMS.gpg").count == 2)
                let fetched = fileRequests().count

                // Someone who can write .jgmirror/ swaps in another list, with a header
                // that matches it: the 304 hands over these bytes, gpgv refuses them, and
                // the list is fetched again, unconditionally: the server's copy is used.
                let cache = cachePath(in: dir)
                let original = try Data(contentsOf: URL(fileURLWithPath: cache))
                let newline = try #require(original.firstIndex(of: 0x0A))
                var header = try #require(try JSONSerialization.jsonObject(with: original[..<newline]) as? [String: Any])
                let forged = Data(sums(["a.iso", "notes.txt"]).utf8)
                header["length"] = forged.count
                header["sha256"] = sha([UInt8](forged))
                var tampered = try JSONSerialization.data(withJSONObject: header)
                tampered.append(0x0A)
                tampered.append(forged)
                try tampered.write(to: URL(fileURLWithPath: cache))

                let third = try await runSync(manifest, in: dir)
                #expect(third.status == 0)
                #expect(sumsExchanges().suffix(2).map(\.status) == [304, 200])
                #expect(Set(third.items.compactMap { $0["dest"] as? String }) == ["a.iso", "b.img"])
                for item in third.items { #expect(item["status"] as? String == "unchanged") }
                #expect(fileRequests().count == fetched)
                #expect(!exists(dir + "/mirror/notes.txt"))
            }
        }
    }

    // MARK: checksums:

    @Test func checksumsListIsFetchedConditionallyToo() async throws {
        serveSums(sums(["a.iso", "b.img"]), etag: "\"v1\"")
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums:
                  - url: \(sumsURL)
                items:
                  - url: \(server.url("/rel/a.iso"))
                  - url: \(server.url("/rel/b.img"))
                """
            let first = try await sync(yaml, in: dir)
            #expect(first.exitCode == .success && first.items.allSatisfy { $0.status == .downloaded })
            let second = try await sync(yaml, in: dir)
            #expect(second.exitCode == .success && second.items.allSatisfy { $0.status == .unchanged })
            #expect(sumsExchanges().last?.conditions == ["if-none-match": "\"v1\""])
            #expect(sumsExchanges().last?.status == 304)

            // The list changes under a kept file: the new hash is the one enforced.
            try Data(files["b.img"]!.reversed()).write(to: URL(fileURLWithPath: dir + "/mirror/b.img"))
            serveSums(sums(["a.iso"]) + String(repeating: "0", count: 64) + "  b.img\n", etag: "\"v2\"")
            let third = try await sync(yaml, in: dir)
            #expect(sumsExchanges().last?.status == 200)
            #expect(third.items.first { $0.dest == "b.img" }?.status == .mismatch)
        }
    }

    /// `verify` checks files against the hashes `checksums:` lists give, as sync does,
    /// asking for each list the same way (a `304` uses the cached copy).
    @Test func verifyChecksTheHashesAChecksumsListGives() async throws {
        serveSums(sums(["a.iso", "b.img"]), etag: "\"v1\"")
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                root: mirror
                checksums:
                  - url: \(sumsURL)
                items:
                  - url: \(server.url("/rel/a.iso"))
                  - url: \(server.url("/rel/b.img"))
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            #expect(try await runSync(path, in: dir).status == 0)
            let clean = try await execute(["verify", path, "--progress", "none"])
            #expect(clean.status == 0, "\(clean.stderr)")
            // plan reads the list too: with its hashes the present files are unchanged, not checked.
            let plan = try await execute(["plan", path])
            let rows = plan.stdout.split(separator: "\n").filter { $0.contains(".iso") || $0.contains(".img") }
            #expect(rows.count == 2 && rows.allSatisfy { $0.hasPrefix("unchanged") }, "\(plan.stdout)")
            try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: dir + "/mirror/b.img"))
            let run = try await execute(["verify", path, "--report", dir + "/v.json", "--progress", "none"])
            #expect(run.status == 3, "\(run.stderr)")
            let items = try #require(try loadReport(dir + "/v.json")["items"] as? [[String: Any]])
            #expect(statuses(items) == ["a.iso": "verified", "b.img": "mismatch"])
            #expect(sumsExchanges().last?.status == 304)
            // verify --require-checksums holds once the list has given its hashes, and
            // a list that gives none fails, with the items it leaves unverified (exit 1).
            serveSums(sums(["a.iso"]), etag: "\"v2\"")
            let required = try await execute(["verify", path, "--require-checksums", "--progress", "none"])
            #expect(required.status == 2 && required.stderr.contains("item 'b.img' has no checksum"), "\(required.stderr)")
            serveSums("# empty\n", etag: "\"v3\"")
            let empty = try await execute(["verify", path, "--progress", "none"])
            #expect(empty.status == 1 && empty.stderr.contains("SHA256SUMS lists no file"), "\(empty.stderr)")
        }
    }

    // MARK: Secrets and origins

    /// A checksums list is asked with the headers of an item served from its own
    /// origin, never another origin's; the cached copy keeps no credential or token of
    /// its URL, and still serves the next run.
    @Test func aChecksumsListGetsOnlyItsOriginsHeadersAndIsCachedWithoutItsSecrets() async throws {
        let other = try TestServer()
        other.set("/rel/a.iso", TestServer.Route(body: files["a.iso"]!))
        serveSums(sums(["a.iso", "b.img"]), etag: "\"v1\"")
        let listURL = sumsURL.replacingOccurrences(of: "http://", with: "http://user:LISTPASS@") + "?token=LISTTOKEN"
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                root: mirror
                checksums:
                  - url: \(listURL)
                items:
                  - url: \(other.url("/rel/a.iso"))
                    headers: {X-Private-Token: ITEMSECRET}
                  - url: \(server.url("/rel/b.img"))
                    headers: {X-Here: HERE}
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            #expect(try await runSync(path, in: dir).status == 0)
            let asked = try #require(server.requests("/rel/SHA256SUMS").last)
            #expect(asked.headers["x-private-token"] == nil && asked.headers["x-here"] == "HERE")
            // Either shard asks for the list alike, also the one whose items are all elsewhere.
            for shard in ["0/2", "1/2"] {
                let run = try await execute(["sync", path, "--shard", shard, "--progress", "none"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(server.requests("/rel/SHA256SUMS").last?.headers["x-here"] == "HERE", "\(shard)")
            }
            // Named without the password: no digest of it is left in the tree.
            let name = sha(Array(Redactor.redactURL(listURL).utf8))
            let cached = try String(contentsOfFile: dir + "/mirror/.jgmirror/lists/" + name, encoding: .utf8)
            #expect(!cached.contains("LISTPASS") && !cached.contains("LISTTOKEN") && cached.contains("SHA256SUMS"))
            #expect(try await runSync(path, in: dir).status == 0)
            #expect(sumsExchanges().last?.status == 304)
        }
    }

    /// A list's signature on another origin gets none of the set's headers.
    @Test func aSignatureElsewhereGetsNoneOfTheSetsHeaders() async throws {
        try await withKeys { keys in
            let other = try TestServer()
            let text = sums(["a.iso"])
            serveSums(text, etag: "\"v1\"")
            other.set("/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let yaml = """
                    version: 1
                    root: mirror
                    sets:
                      - sums: \(sumsURL)
                        signature: \(other.url("/SHA256SUMS.gpg"))
                        keyring: \(keys.keyring)
                        headers: {X-Set-Token: SETSECRET}
                    """
                #expect(try await runSync(write(yaml, to: "m.yaml", in: dir), in: dir).status == 0)
                #expect(server.requests("/rel/SHA256SUMS").last?.headers["x-set-token"] == "SETSECRET")
                let signature = try #require(other.requests("/SHA256SUMS.gpg").last)
                #expect(signature.headers["x-set-token"] == nil)
            }
        }
    }

    /// A list that cannot be fetched is named without its credentials or any query
    /// value, also where the failure quotes a URL itself (a redirect's target).
    @Test func aListThatCannotBeFetchedIsNamedWithoutItsSecrets() async throws {
        var moved = TestServer.Route(body: [])
        moved.redirect = server.url("/gone?token=REDIRTOKEN")
        server.set("/moved", moved)
        let missing = server.url("/missing?token=CKSECRET").replacingOccurrences(of: "http://", with: "http://u:CKPASS@")
        try await withTestDirectory { dir in
            for list in [missing, server.url("/moved?token=FIRSTTOKEN")] {
                let yaml = """
                    version: 1
                    root: mirror
                    defaults: {retries: 0, redact: [token]}
                    checksums:
                      - url: \(list)
                    items:
                      - url: \(server.url("/rel/a.iso"))
                    """
                let path = write(yaml, to: "m.yaml", in: dir)
                let run = try await execute(
                    ["sync", path, "--report", dir + "/r.json", "--events", dir + "/e.jsonl", "--progress", "none"])
                #expect(run.status == 1, "\(run.stderr)")
                #expect(run.stderr.contains("cannot fetch checksums file"), "\(run.stderr)")
                let outputs =
                    try run.stderr + String(contentsOfFile: dir + "/r.json", encoding: .utf8)
                    + String(contentsOfFile: dir + "/e.jsonl", encoding: .utf8)
                for secret in ["CKSECRET", "CKPASS", "REDIRTOKEN", "FIRSTTOKEN"] {
                    #expect(!outputs.contains(secret), "\(secret) in \(outputs)")
                }
            }
        }
    }
}
