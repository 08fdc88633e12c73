import Foundation
import TestServer
import Testing

@testable import JGMirror

/// `publish: true` and ordered placement (docs/publishing.md#ordered,
/// docs/publishing.md#published-lists): a set's verified list and signature are placed after its
/// files, and only when they all are.
@Suite struct PublishingTests {
    let server: TestServer
    /// name → body, as the release folder `/rel/` serves them.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        var files: [String: [UInt8]] = [:]
        for (index, name) in ["a.iso", "b.img", "c.iso"].enumerated() {
            files[name] = TestServer.bytes(count: 30_000 + index * 555, seed: UInt64(900 + index))
        }
        self.files = files
        for (name, body) in files { server.set("/rel/" + name, TestServer.Route(body: body)) }
    }

    func sums(_ names: [String]) -> String {
        names.map { sha(files[$0] ?? []) + "  " + $0 }.joined(separator: "\n") + "\n"
    }

    func serveSums(_ text: String) {
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array(text.utf8)))
    }

    /// A set of `/rel/SHA256SUMS` into `rel/`, published, signed when `keyring` is given.
    func publishedSet(keyring: String? = nil, publish: Bool = true) -> String {
        var yaml = "version: 1\nsets:\n  - sums: \(server.url("/rel/SHA256SUMS"))\n    dest: rel/\n"
        if publish { yaml += "    publish: true\n" }
        if let keyring { yaml += "    signature: \(server.url("/rel/SHA256SUMS.gpg"))\n    keyring: \(keyring)\n" }
        return yaml
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    @Test func theVerifiedListAndSignatureArePlacedAfterTheFiles() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            let signature = try keys.sign(text, with: keys.trusted)
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: signature))
            try await withTestDirectory { dir in
                let order = Locked<[String]>([])
                var options = testOptions()
                options.emitsEvents = true
                var manifest = try Manifest.load(path: write(publishedSet(keyring: keys.keyring), to: "m.yaml", in: dir))
                try await manifest.expandSets(options: options)
                var planOptions = PlanOptions()
                planOptions.root = dir + "/mirror"
                let session = SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options)
                let listening = Task {
                    for await event in session.events {
                        if case .itemFinished(let result) = event { order.withLock { $0.append(result.dest) } }
                    }
                }
                let report = try await session.run()
                await listening.value
                #expect(report.exitCode == .success)
                #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(text.utf8))
                #expect(contents(dir + "/mirror/rel/SHA256SUMS.gpg") == signature)
                #expect(status(report, "rel/SHA256SUMS") == .downloaded && status(report, "rel/SHA256SUMS.gpg") == .downloaded)
                // Every file had its result before the list, and the list before its signature.
                #expect(Array(order.value.suffix(2)) == ["rel/SHA256SUMS", "rel/SHA256SUMS.gpg"])
                #expect(Set(order.value.prefix(2)) == ["rel/a.iso", "rel/b.img"])
                let again = try await syncSets(publishedSet(keyring: keys.keyring), in: dir)
                #expect(status(again, "rel/SHA256SUMS") == .unchanged && status(again, "rel/SHA256SUMS.gpg") == .unchanged)
            }
        }
    }

    @Test func aSetWithAFileThatFailedKeepsItsPreviousList() async throws {
        let first = sums(["a.iso", "b.img"])
        serveSums(first)
        try await withTestDirectory { dir in
            #expect(try await syncSets(publishedSet(), in: dir).exitCode == .success)
            #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(first.utf8))
            // The next release adds c.iso, which cannot be fetched.
            var missing = TestServer.Route(body: files["c.iso"]!)
            missing.fault = { _ in .status(404) }
            server.set("/rel/c.iso", missing)
            serveSums(sums(["a.iso", "b.img", "c.iso"]))
            let report = try await syncSets(publishedSet(), in: dir)
            #expect(status(report, "rel/c.iso") == .failed)
            #expect(status(report, "rel/SHA256SUMS") == .skipped)
            #expect(
                report.items.first { $0.dest == "rel/SHA256SUMS" }?.note?.contains("'rel/c.iso' did not reach its place") == true)
            #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(first.utf8))
        }
    }

    @Test func aListWhoseSignatureFailsKeepsThePreviousListAndSignature() async throws {
        try await withKeys { keys in
            let first = sums(["a.iso"])
            let signature = try keys.sign(first, with: keys.trusted)
            serveSums(first)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: signature))
            try await withTestDirectory { dir in
                #expect(try await syncSets(publishedSet(keyring: keys.keyring), in: dir).exitCode == .success)
                // Signed by a key outside the keyring, then not signed at all.
                let second = sums(["a.iso", "b.img"])
                serveSums(second)
                server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(second, with: keys.stranger)))
                let refused = try await syncSets(publishedSet(keyring: keys.keyring), in: dir)
                #expect(refused.exitCode != .success)
                var unsigned = TestServer.Route(body: [])
                unsigned.fault = { _ in .status(404) }
                server.set("/rel/SHA256SUMS.gpg", unsigned)
                _ = try await syncSets(publishedSet(keyring: keys.keyring), in: dir)
                #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(first.utf8))
                #expect(contents(dir + "/mirror/rel/SHA256SUMS.gpg") == signature)
                #expect(!exists(dir + "/mirror/rel/b.img"))
            }
        }
    }

    @Test func deleteKeepsThePublishedList() async throws {
        serveSums(sums(["a.iso", "b.img"]))
        try await withTestDirectory { dir in
            var options = testOptions()
            options.delete = true
            #expect(try await syncSets(publishedSet(), in: dir, options: options).exitCode == .success)
            serveSums(sums(["a.iso"]))
            let report = try await syncSets(publishedSet(), in: dir, options: options)
            #expect(report.exitCode == .success)
            #expect(status(report, "rel/b.img") == .deleted && status(report, "rel/SHA256SUMS") == .downloaded)
            #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(sums(["a.iso"]).utf8))
        }
    }

    @Test func aRunHoldingPartOfASetPublishesNothing() async throws {
        serveSums(sums(["a.iso", "b.img"]))
        try await withTestDirectory { dir in
            var manifest = try Manifest.load(path: write(publishedSet(), to: "m.yaml", in: dir))
            try await manifest.expandSets(options: testOptions())
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            // A shard that holds one of the two files.
            planOptions.shard =
                (2...8).lazy.flatMap { count in (0..<count).map { (index: $0, count: count) } }
                .compactMap { (index: Int, count: Int) -> Shard? in
                    var trial = planOptions
                    trial.shard = try? Shard(index: index, count: count)
                    return Plan(manifest: manifest, options: trial).items.count == 1 ? trial.shard : nil
                }.first
            try #require(planOptions.shard != nil)
            let report = try await SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: testOptions()).run()
            #expect(!exists(dir + "/mirror/rel/SHA256SUMS"))
            #expect(report.warnings.contains { $0.contains("SHA256SUMS was not published: this run does not hold") })
        }
    }

    @Test func aListNamingItsOwnFileFailsItsSet() async throws {
        serveSums(sums(["a.iso"]) + sha([1]) + "  SHA256SUMS\n")
        try await withTestDirectory { dir in
            let report = try await syncSets(publishedSet(), in: dir)
            #expect(report.items.first?.error?.code == .list)
            #expect(report.items.first?.error?.message.contains("cannot publish") == true)
        }
    }

    @Test(arguments: [
        ("https://h/rel/", "'publish' needs a list URL that ends in a file name"),
        ("https://h/rel/SUMS", ""),
    ])
    func publishNeedsAListURLEndingInAFileName(url: String, message: String) throws {
        let yaml = "version: 1\nsets:\n  - sums: \(url)\n    dest: rel/\n    publish: true\n"
        if message.isEmpty {
            #expect(try Manifest.parse(yaml).sets.first?.publish == true)
        } else {
            #expect {
                try Manifest.parse(yaml)
            } throws: { error in
                (error as? ManifestError)?.errorDescription?.contains(":5:5: \(message)") == true
            }
        }
    }

    // MARK: A reader during the sync

    /// Syncs `yaml` into `dir/mirror` while `reader` reads the tree in a loop, with
    /// `c.iso`'s download held until every item in `others` has its result and the
    /// reader has looked once more; returns the report and what the reader found.
    func syncWhileReading(_ yaml: String, in dir: String, options: SyncOptions, reader: TreeReader, others: Set<String>)
        async throws -> (RunReport, [String])
    {
        let release = DispatchSemaphore(value: 0)
        var held = TestServer.Route(body: files["c.iso"]!)
        held.faultAtStart = { _ in
            _ = release.wait(timeout: .now() + 30)
            return nil
        }
        server.set("/rel/c.iso", held)
        var options = options
        options.emitsEvents = true
        var manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
        try await manifest.expandSets(options: options)
        var planOptions = PlanOptions()
        planOptions.root = dir + "/mirror"
        let session = SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: options)
        let listening = Task {
            var finished = Set<String>()
            for await event in session.events {
                guard case .itemFinished(let result) = event else { continue }
                finished.insert(result.dest)
                if finished.isSuperset(of: others) { reader.othersDone() }
            }
        }
        reader.start { release.signal() }
        let report = try await session.run()
        await listening.value
        return (report, reader.stop())
    }

    /// Acceptance (issue 33): a reader reads the tree in a loop while a sync adds a
    /// file to a release, and checks that every list it sees names only files that
    /// are there with the listed hashes (a list that changed while it was being
    /// checked proves nothing, and is read again). The new file's download is held
    /// until every other item has its result and the reader has looked once more.
    ///
    /// Published (`publish: true`), the reader never meets a missing file. The
    /// list mirrored as a plain item beside its set (today's way, `published` false)
    /// is placed as soon as it is fetched, and the reader meets the list naming a
    /// file that is not there: the check itself works.
    @Test(arguments: [true, false])
    func aReaderNeverSeesAListAheadOfItsFiles(published: Bool) async throws {
        serveSums(sums(["a.iso", "b.img"]))
        try await withTestDirectory { dir in
            var yaml = publishedSet(publish: published)
            if !published { yaml += "items:\n  - {url: \(server.url("/rel/SHA256SUMS")), dest: rel/SHA256SUMS}\n" }
            #expect(try await syncSets(yaml, in: dir).exitCode == .success)

            serveSums(sums(["a.iso", "b.img", "c.iso"]))
            let others: Set<String> = published ? ["rel/a.iso", "rel/b.img"] : ["rel/a.iso", "rel/b.img", "rel/SHA256SUMS"]
            let (report, violations) = try await syncWhileReading(
                yaml, in: dir, options: testOptions(), reader: TreeReader(folder: dir + "/mirror/rel"), others: others)
            #expect(report.items.first { $0.dest == "rel/c.iso" }?.status == .downloaded)
            if published {
                #expect(violations.isEmpty, "\(violations.prefix(3))")
                #expect(contents(dir + "/mirror/rel/SHA256SUMS") == Array(sums(["a.iso", "b.img", "c.iso"]).utf8))
            } else {
                #expect(violations.contains { $0.contains("c.iso") })
            }
        }
    }
}
