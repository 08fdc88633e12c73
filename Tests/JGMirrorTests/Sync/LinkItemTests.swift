import Foundation
import JGMirror
import TestServer
import Testing

/// `link:` items (docs/manifest.md#link-items, docs/safety.md#links): relative symlinks placed
/// atomically after the files, recorded, verified, pruned like files.
@Suite struct LinkItemTests {
    let server: TestServer
    let first = TestServer.bytes(count: 3000, seed: 31)
    let second = TestServer.bytes(count: 4000, seed: 32)

    init() throws { server = try TestServer() }

    // MARK: Manifest

    @Test func aLinkItemParsesWithDestTagAndTags() throws {
        let manifest = try Manifest.parse(
            "version: 1\nitems:\n  - link: releases/v2\n    dest: current\n    tag: 4\n    tags: [site]\n", name: "m.yaml")
        let item = try #require(manifest.items.first)
        #expect(item.link == "releases/v2" && item.dest == "current" && item.url.isEmpty)
        #expect(item.tag == 4 && item.settings.tags == ["site"])
        let planned = try #require(Plan(manifest: manifest).items.first)
        #expect(planned.isLink && planned.link == "releases/v2" && !planned.hasChecksum)
    }

    @Test(arguments: [
        ("  - link: /etc\n    dest: current\n", "m.yaml:3:11: link target '/etc' is absolute"),
        ("  - link: ../../x\n    dest: a/current\n", "m.yaml:3:11: link target '../../x' of 'a/current' leaves the root"),
        (
            "  - link: ../a/current/x\n    dest: a/current\n",
            "m.yaml:3:11: link target '../a/current/x' of 'a/current' points at the link itself"
        ),
        (
            "  - link: current/x\n    dest: current\n",
            "m.yaml:3:11: link target 'current/x' of 'current' points at the link itself"
        ),
        ("  - link: .jgmirror\n    dest: current\n", "m.yaml:3:11: link target '.jgmirror' points into jgmirror's state folder"),
        (
            "  - link: releases/v2\n    dest: current\n    url: http://127.0.0.1:9/a\n",
            "m.yaml:5:5: 'url' cannot be used with 'link'"
        ),
        (
            "  - sha256: \(String(repeating: "a", count: 64))\n    link: v2\n    dest: current\n",
            "m.yaml:3:5: 'sha256' cannot be used with 'link'"
        ),
        (
            "  - link: v2\n    mirrors: [http://127.0.0.1:9/a]\n    dest: current\n",
            "m.yaml:4:5: 'mirrors' cannot be used with 'link'"
        ),
        ("  - link: v2\n    dest: current\n    size: 10\n", "m.yaml:5:5: 'size' cannot be used with 'link'"),
        ("  - link: v2\n", "m.yaml:3:5: a 'link' item needs a 'dest'"),
        ("  - link: v2\n    dest: current/\n", "m.yaml:4:11: the 'dest' of a link names the link itself"),
    ])
    func aBadLinkItemIsAManifestErrorAtItsPlace(item: String, expected: String) throws {
        #expect {
            try Manifest.parse("version: 1\nitems:\n" + item, name: "m.yaml")
        } throws: { error in
            (error as? ManifestError)?.errorDescription?.hasPrefix(expected) == true
        }
    }

    /// A link has no checksum and needs none: `--require-checksums` is about downloads.
    @Test func requireChecksumsLeavesLinkItemsAlone() throws {
        let yaml = "version: 1\nitems:\n  - link: releases/v2\n    dest: current\n"
        let manifest = try Manifest.parse(yaml, name: "m.yaml", options: ManifestOptions(requireChecksums: true))
        try Plan(manifest: manifest).requireChecksums()
        #expect(manifest.items.count == 1)
    }

    /// A target that stays inside lexically but leads out through a symlink already
    /// on disk is no fault of the manifest: `plan` passes it, and the run fails that
    /// link alone (`unsafe_path`). A plan changed through the library is held to the
    /// parser's rules.
    @Test func aTargetLeadingOutThroughASymlinkOnDiskFailsThatLinkAlone() async throws {
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: dir + "/mirror/out", withDestinationPath: dir + "/outside")
            let yaml = "version: 1\nitems:\n  - link: out/x\n    dest: current\n  - link: inside\n    dest: fine\n"
            var plan = try plan(yaml, root: dir + "/mirror")
            try plan.checkDestinationsOnDisk()
            let (report, _) = try await run(yaml, root: dir + "/mirror")
            let refused = try #require(report.items.first { $0.dest == "current" })
            #expect(refused.status == .failed && refused.error?.code == .unsafePath)
            #expect(
                refused.error?.message.contains("link target 'out/x' of 'current' leaves the root through the link 'out'") == true
            )
            #expect(report.items.first { $0.dest == "fine" }?.status == .downloaded)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/mirror/current")) == nil)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/mirror/fine")) == "inside")
            plan.items[0].link = "/etc"
            #expect {
                try plan.checkDestinationsOnDisk()
            } throws: { error in
                (error as? ManifestError)?.errorDescription?.contains("m.yaml:3:5: link target '/etc' is absolute") == true
            }
        }
    }

    // MARK: Sync

    /// Runs `yaml` into `root`; the report and the events in the order they came.
    func run(_ yaml: String, root: String, delete: Bool = false, failFast: Bool = false) async throws -> (RunReport, [SyncEvent])
    {
        var options = testOptions()
        options.delete = delete
        options.failFast = failFast
        return try await runCollecting(SyncSession(plan: try plan(yaml, root: root), options: options))
    }

    /// Two files of release `version` and `current` linking to it.
    func layout(_ version: String, link: Bool = true) -> String {
        server.set("/\(version)/a.bin", TestServer.Route(body: first))
        server.set("/\(version)/b.bin", TestServer.Route(body: second))
        var yaml = """
            version: 1
            items:
              - {url: \(server.url("/\(version)/a.bin")), dest: releases/\(version)/a.bin, sha256: \(sha(first))}
              - link: releases/\(version)
                dest: current
              - {url: \(server.url("/\(version)/b.bin")), dest: releases/\(version)/b.bin, sha256: \(sha(second))}

            """
        if !link { yaml = yaml.replacingOccurrences(of: "  - link: releases/\(version)\n    dest: current\n", with: "") }
        return yaml
    }

    func inode(_ path: String) -> UInt64? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    @Test func syncPlacesTheLinkAfterTheFilesAndLeavesNoTemporaryName() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            let (report, events) = try await run(layout("v2"), root: root)
            #expect(report.exitCode == .success)
            #expect(status(report, "current") == .downloaded)
            let row = try #require(report.items.first { $0.dest == "current" })
            #expect(row.link == "releases/v2" && row.url.isEmpty && row.bytes == nil && row.bytesDownloaded == 0)
            #expect(target(root + "/current") == "releases/v2")
            #expect(FileManager.default.contents(atPath: root + "/current/a.bin") == Data(first))
            // Placed after every file: its result is the last to come.
            let finished = events.compactMap { event -> String? in
                if case .itemFinished(let result) = event { return result.dest }
                return nil
            }
            #expect(finished.last == "current" && finished.count == 3)
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).sorted() == [".jgmirror", "current", "releases"])
            let json = String(decoding: try report.jsonData(), as: UTF8.self)
            #expect(json.contains("\"link\": \"releases/v2\""), "\(json)")
        }
    }

    /// A link in folders no item makes: they are made, and the link checks out.
    @Test func aLinkInAFolderNoItemMakesIsPlacedWithItsFolders() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            let yaml = "version: 1\nitems:\n  - link: ../../releases/v2\n    dest: a/b/latest\n"
            let (report, _) = try await run(yaml, root: root)
            #expect(report.exitCode == .success && status(report, "a/b/latest") == .downloaded)
            #expect(target(root + "/a/b/latest") == "../../releases/v2")
            let verified = try await Verification.run(plan: try plan(yaml, root: root))
            #expect(verified.exitCode == .success && status(verified, "a/b/latest") == .verified)
            let (again, _) = try await run(yaml, root: root)
            #expect(status(again, "a/b/latest") == .unchanged)
            // Pruned with the folders it leaves empty; a folder an item needs stays.
            let other = "version: 1\nitems:\n  - link: x\n    dest: a/other\n"
            let (pruned, _) = try await run(other, root: root, delete: true)
            #expect(status(pruned, "a/b/latest") == .deleted)
            #expect(!exists(root + "/a/b") && target(root + "/a/other") == "x")
        }
    }

    @Test func aSecondRunLeavesTheLinkAndAChangedTargetRewritesIt() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            _ = try await run(layout("v2"), root: root)
            let before = inode(root + "/current")
            let (again, _) = try await run(layout("v2"), root: root)
            #expect(status(again, "current") == .unchanged && again.exitCode == .success)
            #expect(inode(root + "/current") == before && before != nil)
            let (moved, _) = try await run(layout("v3"), root: root)
            #expect(status(moved, "current") == .downloaded && moved.exitCode == .success)
            #expect(target(root + "/current") == "releases/v3")
            #expect(!exists(root + "/current.jgpart"))
        }
    }

    /// A regular file at the link's place is replaced; a folder with files in it is
    /// not, and fails that item alone.
    @Test func aFileIsReplacedButAFolderWithFilesIsNot() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            write("old", to: "mirror/current", in: dir)
            let (replaced, _) = try await run(layout("v2"), root: root)
            #expect(status(replaced, "current") == .downloaded && target(root + "/current") == "releases/v2")
            try FileManager.default.removeItem(atPath: root + "/current")
            write("keep me", to: "mirror/current/notes.txt", in: dir)
            let (refused, _) = try await run(layout("v2"), root: root)
            let row = try #require(refused.items.first { $0.dest == "current" })
            #expect(row.status == .failed && row.error?.code == .unsafePath, "\(String(describing: row.error))")
            #expect(refused.exitCode == .local)
            #expect(FileManager.default.contents(atPath: root + "/current/notes.txt") == Data("keep me".utf8))
            #expect(!exists(root + "/current.jgpart"))
        }
    }

    /// A file of the new target that failed keeps the link where it was.
    @Test func aLinkIsNotSwitchedToATargetWhoseFileFailed() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            _ = try await run(layout("v2"), root: root)
            let yaml = layout("v3")
            var missing = TestServer.Route(body: second)
            missing.fault = { _ in .status(404) }
            server.set("/v3/b.bin", missing)
            let (report, _) = try await run(yaml, root: root)
            #expect(status(report, "releases/v3/b.bin") == .failed)
            let row = try #require(report.items.first { $0.dest == "current" })
            #expect(row.status == .skipped && row.note?.contains("releases/v3/b.bin") == true, "\(String(describing: row.note))")
            #expect(target(root + "/current") == "releases/v2")
        }
    }

    /// A run stopped by `--fail-fast` places no link, even one whose target is whole.
    @Test func aFailFastStopLeavesEveryLinkAsItWas() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            var missing = TestServer.Route(body: second)
            missing.fault = { _ in .status(404) }
            server.set("/gone.bin", missing)
            let yaml = layout("v2") + "  - {url: \(server.url("/gone.bin")), dest: other/gone.bin}\n"
            let (report, _) = try await run(yaml, root: root, failFast: true)
            #expect(status(report, "other/gone.bin") == .failed)
            #expect(status(report, "current") == .skipped && target(root + "/current") == nil)
        }
    }

    /// A destination through a symlink no item placed still fails `unsafe_path`, in a
    /// run whose link item goes ahead.
    @Test func aDestinationThroughAnUnmanagedSymlinkFailsUnsafePath() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            _ = try await run(layout("v2"), root: root)
            try FileManager.default.createSymbolicLink(atPath: root + "/other", withDestinationPath: "releases/v2")
            server.set("/c.bin", TestServer.Route(body: first))
            let yaml = layout("v2") + "  - {url: \(server.url("/c.bin")), dest: other/c.bin}\n"
            let (report, _) = try await run(yaml, root: root)
            let row = try #require(report.items.first { $0.dest == "other/c.bin" })
            #expect(row.status == .failed && row.error?.code == .unsafePath)
            #expect(status(report, "current") == .unchanged)
            #expect(!exists(root + "/releases/v2/c.bin"))
        }
    }

    /// A file item takes the place of a link that a former link item placed; a symlink
    /// jgmirror did not place still fails its item.
    @Test func aFileItemReplacesALinkALinkItemPlacedButNoOther() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            _ = try await run(layout("v2"), root: root)
            try FileManager.default.createSymbolicLink(atPath: root + "/mine", withDestinationPath: "releases/v2")
            server.set("/c.bin", TestServer.Route(body: first))
            let yaml =
                layout("v2", link: false) + """
                      - {url: \(server.url("/c.bin")), dest: current, sha256: \(sha(first))}
                      - {url: \(server.url("/c.bin")), dest: mine, sha256: \(sha(first))}

                    """
            let (report, _) = try await run(yaml, root: root)
            #expect(status(report, "current") == .downloaded)
            #expect(target(root + "/current") == nil && FileManager.default.contents(atPath: root + "/current") == Data(first))
            let mine = try #require(report.items.first { $0.dest == "mine" })
            #expect(mine.status == .failed && mine.error?.code == .unsafePath)
            #expect(target(root + "/mine") == "releases/v2")
        }
    }

    @Test func verifyChecksTheLinksTarget() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            let yaml = layout("v2")
            _ = try await run(yaml, root: root)
            let good = try await Verification.run(plan: try plan(yaml, root: root))
            #expect(good.exitCode == .success && status(good, "current") == .verified)
            try FileManager.default.removeItem(atPath: root + "/current")
            try FileManager.default.createSymbolicLink(atPath: root + "/current", withDestinationPath: "releases/v1")
            let other = try await Verification.run(plan: try plan(yaml, root: root))
            let row = try #require(other.items.first { $0.dest == "current" })
            #expect(row.status == .mismatch && row.error?.code == .linkMismatch && other.exitCode == .integrity)
            try FileManager.default.removeItem(atPath: root + "/current")
            let gone = try await Verification.run(plan: try plan(yaml, root: root))
            #expect(status(gone, "current") == .missing && gone.exitCode == .integrity)
        }
    }

    /// `--delete` removes a link a former item placed, not one it did not place, and
    /// follows neither.
    @Test func deleteRemovesALinkNoItemPlacesAnyMore() async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            _ = try await run(layout("v2"), root: root)
            let store = try #require(StateStore.openExisting(root: root))
            #expect(try store.links() == ["current": "releases/v2"])
            store.close()
            try FileManager.default.createSymbolicLink(atPath: root + "/mine", withDestinationPath: "releases/v2")
            let (report, _) = try await run(layout("v2", link: false), root: root, delete: true)
            #expect(report.exitCode == .success)
            let row = try #require(report.items.first { $0.dest == "current" })
            #expect(row.status == .deleted && row.link == "releases/v2")
            #expect(target(root + "/current") == nil && !exists(root + "/current"))
            #expect(target(root + "/mine") == "releases/v2")
            #expect(exists(root + "/releases/v2/a.bin") && exists(root + "/releases/v2/b.bin"))
            let after = try #require(StateStore.openExisting(root: root))
            #expect(try after.links().isEmpty)
            after.close()
        }
    }

    // MARK: The built binary

    @Test func theUsualLayoutThroughTheBinary() async throws {
        try await withTestDirectory { dir in
            let path = write("root: mirror\n" + layout("v2"), to: "site.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "lines", "--report", dir + "/r.json"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.contains("current -> releases/v2"), "\(run.stderr)")
            #expect(target(dir + "/mirror/current") == "releases/v2")
            #expect(FileManager.default.contents(atPath: dir + "/mirror/current/b.bin") == Data(second))
            let items = try #require(try loadReport(dir + "/r.json")["items"] as? [[String: Any]])
            let link = try #require(items.first { $0["dest"] as? String == "current" })
            #expect(
                link["link"] as? String == "releases/v2" && link["url"] as? String == ""
                    && link["status"] as? String == "downloaded")
            let again = try await execute(["sync", path, "--progress", "none", "--report", dir + "/r2.json"])
            #expect(again.status == 0, "\(again.stderr)")
            let second = try #require(try loadReport(dir + "/r2.json")["items"] as? [[String: Any]])
            #expect(second.first { $0["dest"] as? String == "current" }?["status"] as? String == "unchanged")
            let verify = try await execute(["verify", path, "--progress", "none"])
            #expect(verify.status == 0, "\(verify.stderr)")
            let plan = try await execute(["plan", path])
            #expect(plan.status == 0 && plan.stdout.contains("-> releases/v2"), "\(plan.stdout)")
            #expect(plan.stdout.split(separator: "\n").contains { $0.hasPrefix("unchanged") && $0.contains("current") })
            // An escaping target is refused before anything is fetched.
            let bad = write("version: 1\nitems:\n  - link: ../../x\n    dest: a/current\n", to: "bad.yaml", in: dir)
            let refused = try await execute(["plan", bad])
            #expect(
                refused.status == 2
                    && refused.stderr.contains("bad.yaml:3:11: link target '../../x' of 'a/current' leaves the root"),
                "\(refused.stderr)")
        }
    }
}
