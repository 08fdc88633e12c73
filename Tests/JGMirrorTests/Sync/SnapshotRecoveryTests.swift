import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Snapshot publishing through the built binary (issue 41, points 12 and 13): a run
/// that changes nothing leaves `current` (and a set's link) where it is and retires
/// no snapshot; a run after one that ran out of space retires what is past `--keep`
/// and the unfinished snapshot before it builds, so it recovers once the release fits.
@Suite struct SnapshotRecoveryTests {
    let server: TestServer

    init() throws { server = try TestServer() }

    /// Release `version`: `count` files of `size` bytes, served and named in a
    /// manifest with root `mirror` (`set`: as a set with `publish: snapshot` in `rel/`).
    func release(_ version: Int, count: Int = 3, size: Int = 4000, set: Bool = false) -> String {
        var list = ""
        var items = ""
        for index in 0..<count {
            let name = "v\(version)-\(index).bin"
            let body = TestServer.bytes(count: size, seed: UInt64(version * 100 + index))
            server.set("/r/" + name, TestServer.Route(body: body))
            list += sha(body) + "  " + name + "\n"
            items += "  - {url: \(server.url("/r/" + name)), dest: \(name), sha256: \(sha(body))}\n"
        }
        server.set("/r/SHA256SUMS-\(version)", TestServer.Route(body: Array(list.utf8)))
        guard set else { return "version: 1\nroot: mirror\nitems:\n" + items }
        let sums = server.url("/r/SHA256SUMS-\(version)")
        return "version: 1\nroot: mirror\nsets:\n  - {sums: \(sums), dest: rel/, publish: snapshot}\n"
    }

    func ids(_ root: String, scope: String = "") -> [String] { SnapshotTree(root: root, scope: scope).ids() }

    func snapshot(_ report: String) throws -> [String: Any] {
        let written = try loadReport(report)
        return written["snapshot"] as? [String: Any] ?? (written["set_snapshots"] as? [[String: Any]])?.first ?? [:]
    }

    // MARK: Point 12

    /// `--keep 3`: a reader resolves `current`; two runs that change nothing leave it
    /// there and retire nothing, and the reader's snapshot outlives the real run after.
    @Test(arguments: [false, true])
    func aRunThatChangesNothingLeavesCurrentAndRetiresNothing(set: Bool) async throws {
        try await withTestDirectory { dir in
            let root = dir + "/mirror"
            let scope = set ? "rel" : ""
            let link = set ? root + "/rel" : root + "/current"
            let base = ["--keep", "3", "--progress", "none"] + (set ? [] : ["--publish", "snapshot"])
            for version in 1...3 {
                let path = write(release(version, set: set), to: "m.yaml", in: dir)
                #expect(try await execute(["sync", path] + base).status == 0)
            }
            let resolved = try #require(Paths.canonical(link))
            let before = ids(root, scope: scope)
            #expect(before.count == 3)
            for _ in 0..<2 {
                let run = try await execute(["sync", dir + "/m.yaml", "--report", dir + "/r.json"] + base)
                #expect(run.status == 0, "\(run.stderr)")
                #expect(Paths.canonical(link) == resolved)
                #expect(ids(root, scope: scope) == before)
                let outcome = try snapshot(dir + "/r.json")
                #expect(outcome["published"] as? Bool == false && outcome["unchanged"] as? Bool == true, "\(outcome)")
                #expect(run.stderr.contains("\(before.last ?? "?") unchanged"), "\(run.stderr)")
            }
            let path = write(release(4, set: set), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path] + base).status == 0)
            #expect(Paths.canonical(link) != resolved)
            #expect(exists(resolved), "the snapshot a reader resolved was retired after one publication")
        }
    }

    // MARK: Point 13

    /// On a 6 MiB file system: four releases of 1 MB each are published (`--keep 4`);
    /// a fifth of 3.45 MB does not fit beside them (`disk_full`, exit 4, `current`
    /// unchanged). The next run recovers by itself: with `--keep 2` (the snapshots past
    /// it retired first), or once the upstream shrank to 1.2 MB (more than the space
    /// left), the unfinished snapshot that filled the disk removed first.
    @Test(arguments: ["keep", "shrink"])
    func aRunAfterADiskFullRetiresFirstAndRecovers(remedy: String) async throws {
        try await withTestDirectory { dir in
            guard let root = try await SmallFileSystem.mount(at: dir + "/mirror", size: "6m") else { return }
            defer { root.unmount() }
            // Each release replaces the one before: every snapshot holds 1 MB of its own.
            let base = ["--publish", "snapshot", "--delete", "--max-delete", "100%", "--progress", "none"]
            for version in 1...4 {
                let path = write(release(version, size: 340_000), to: "m.yaml", in: dir)
                #expect(try await execute(["sync", path, "--keep", "4"] + base).status == 0)
            }
            let published = SnapshotTree(root: root.path).currentID()
            let big = write(release(5, size: 1_150_000), to: "m.yaml", in: dir)
            let full = try await execute(["sync", big, "--keep", "4", "--report", dir + "/r.json"] + base)
            #expect(full.status == 4, "\(full.stderr)")
            let codes = (try loadReport(dir + "/r.json")["items"] as? [[String: Any]] ?? []).compactMap {
                ($0["error"] as? [String: Any])?["code"] as? String
            }
            #expect(codes.contains("disk_full"), "\(codes)")
            #expect(SnapshotTree(root: root.path).currentID() == published)
            let recovered: Execution
            if remedy == "keep" {
                recovered = try await execute(["sync", big, "--keep", "2"] + base)
            } else {
                let small = write(release(6, size: 400_000), to: "m.yaml", in: dir)
                recovered = try await execute(["sync", small, "--keep", "4"] + base)
            }
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let current = try #require(SnapshotTree(root: root.path).currentID())
            #expect(current != published)
            let version = remedy == "keep" ? 5 : 6
            #expect(exists(root.path + "/current/v\(version)-0.bin"))
            #expect(try await execute(["verify", dir + "/m.yaml", "--progress", "none"]).status == 0)
        }
    }
}

/// A tmpfs of a given size mounted for one test: a file system that fills up for
/// real. Nil, with the reason printed, where this process may not mount one (not
/// root, or in a container without the capability).
struct SmallFileSystem {
    let path: String

    static func mount(at path: String, size: String) async throws -> SmallFileSystem? {
        guard geteuid() == 0 else {
            print("skipped: mounting a small tmpfs needs root")
            return nil
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let run = try await runProgram("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
        guard run.status == 0 else {
            print("skipped: cannot mount a tmpfs (\(run.stderr.trimmingCharacters(in: .whitespacesAndNewlines)))")
            return nil
        }
        return SmallFileSystem(path: path)
    }

    /// Unmounts it (lazily, should a process still hold a file there).
    func unmount() { umount2(path, Int32(MNT_DETACH)) }
}
