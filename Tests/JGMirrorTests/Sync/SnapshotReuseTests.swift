import Foundation
import Testing

@testable import JGMirror

/// The snapshot a run would prune (past `keep` published ones) becomes its `next`,
/// brought to the current snapshot's state name by name (`SnapshotTree.reuse`).
@Suite struct SnapshotReuseTests {
    /// Every entry under `folder`: a file by its inode, a symlink by its target, a folder
    /// by its name alone.
    func listing(_ folder: String) -> [String: String] {
        var found: [String: String] = [:]
        TreeWalker.walk(root: folder) { relative, kind in
            var info = stat()
            lstat(folder + "/" + relative, &info)
            switch kind {
            case .file: found[relative] = "file \(info.st_ino)"
            case .folder: found[relative] = "folder"
            case .symlink:
                found[relative] =
                    "link " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + relative)) ?? "")
            case .other: found[relative] = "other"
            }
            return kind == .folder ? .enter : .skip
        }
        return found
    }

    func file(_ path: String, _ text: String) {
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
    }

    func ctime(_ path: String) -> Int64 {
        var info = stat()
        lstat(path, &info)
        return FileStat(info).ctimeNs
    }

    /// Also with every file looked at, as on a file system whose folder entries may not
    /// carry the inode number (`lookingAtEachFile`; the test's folder carries them).
    @Test(arguments: [false, true])
    func theExpiredSnapshotBecomesNextWithTheCurrentSnapshotsEntries(lookingAtEachFile: Bool) throws {
        try withTestDirectorySync { dir in
            let tree = SnapshotTree(root: dir)
            let expired = "000001-20261101T000000Z"
            let previous = "000002-20261102T000000Z"
            let published = "000003-20261103T000000Z"
            let (old, mid, current) = (tree.folder + "/" + expired, tree.folder + "/" + previous, tree.folder + "/" + published)
            // The current snapshot, and the previous one: both kept as they are.
            for name in ["same.bin", "replaced.bin", "sub/new.bin", "was-folder", "deep/a/b.bin", "left.jgpart"] {
                file(current + "/" + name, "current " + name)
            }
            try FileManager.default.createDirectory(atPath: current + "/was-file", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: current + "/link", withDestinationPath: "same.bin")
            try FileManager.default.createSymbolicLink(atPath: current + "/kept-link", withDestinationPath: "sub")
            file(mid + "/same.bin", "previous")
            // The expired one: one file shared with the current snapshot, the rest stale.
            file(old + "/placeholder", "")
            #expect(link(current + "/same.bin", old + "/same.bin") == 0)
            for name in ["replaced.bin", "gone.bin", "gone-folder/x/y.bin", "was-file", "was-folder/z.bin", "deep/a/c.bin"] {
                file(old + "/" + name, "expired " + name)
            }
            // "café" composed in the current snapshot, decomposed in the expired one: one
            // name to `String`'s `==`, two to the file system.
            let (composed, decomposed) = ("caf\u{E9}.bin", "cafe\u{301}.bin")
            for path in [current + "/" + composed, old + "/" + decomposed] {
                #expect(close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)) == 0)
            }
            #expect(symlink(composed, current + "/accent-link") == 0 && symlink(decomposed, old + "/accent-link") == 0)
            try FileManager.default.createSymbolicLink(atPath: old + "/link", withDestinationPath: "replaced.bin")
            try FileManager.default.createSymbolicLink(atPath: old + "/kept-link", withDestinationPath: "sub")
            try FileManager.default.createSymbolicLink(
                atPath: dir + "/current", withDestinationPath: ".jgmirror/snapshots/" + published)
            let currentBefore = listing(current)
            let sharedCtime = ctime(current + "/same.bin")
            let steps = Locked<[SnapshotTree.Step]>([])

            var expected = currentBefore
            expected["left.jgpart"] = nil
            let differing: Set<String> = ["replaced.bin", "sub/new.bin", "was-folder", "deep/a/b.bin", composed]
            /// The names of `folder` that spell "café" and the bytes its accent link names.
            func accents(_ folder: String) -> [[UInt8]] {
                let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasPrefix("caf") }
                let link = Symlink.target(folder + "/accent-link") ?? ""
                return names.map { Array($0.utf8) } + [Array(link.utf8)]
            }
            if lookingAtEachFile {
                let linked = try SnapshotTree.reuse(old, toMatch: current, entriesCarryInodes: false) { _ in }
                #expect(listing(old) == expected)
                #expect(Set(linked.map(\.dest)) == differing)
                #expect(accents(old) == [Array(composed.utf8), Array(composed.utf8)])
                return
            }

            let prepared = try tree.prepare(keep: 2, pool: WorkPool(computingThreads: 1)) { step in
                steps.withLock { $0.append(step) }
            }

            #expect(listing(tree.building) == expected)
            #expect(accents(tree.building) == [Array(composed.utf8), Array(composed.utf8)])
            #expect(listing(current) == currentBefore)
            #expect(prepared.pruned == [expired])
            #expect(tree.ids() == [previous, published])
            // Only the files that differed were linked; the shared one kept its ctime.
            #expect(Set(prepared.linked.map(\.dest)) == differing)
            #expect(ctime(current + "/same.bin") == sharedCtime)
            #expect(steps.value == [.pruning, .cloning])
        }
    }

    /// A name that is not UTF-8 in the expired snapshot (put there by hand: jgmirror
    /// never links one) stops the reuse; the run goes on with a fresh `next`.
    @Test func anExpiredSnapshotThatCannotBeReusedGivesWayToAFreshLink() throws {
        try withTestDirectorySync { dir in
            let tree = SnapshotTree(root: dir)
            let ids = (1...3).map { String(format: "%06d-20261101T000000Z", $0) }
            for id in ids { file(tree.folder + "/" + id + "/f.bin", id) }
            let odd: [CChar] = Array((tree.folder + "/" + ids[0] + "/odd-").utf8CString.dropLast()) + [-1, 0]
            let fd = open(odd, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            close(fd)
            try FileManager.default.createSymbolicLink(
                atPath: dir + "/current", withDestinationPath: ".jgmirror/snapshots/" + ids[2])
            let prepared = try tree.prepare(keep: 2, pool: WorkPool(computingThreads: 1)) { _ in }
            #expect(listing(tree.building) == listing(tree.folder + "/" + ids[2]))
            #expect(prepared.linked.map(\.dest) == ["f.bin"])
            #expect(prepared.warning?.contains("not reused for the new one") == true, "\(prepared.warning ?? "")")
            #expect(!exists(tree.folder + "/" + SnapshotTree.cloningName))
            // Removed, or back under its name when it could not be.
            #expect(prepared.pruned == [ids[0]] ? tree.ids() == Array(ids.suffix(2)) : tree.ids() == ids)
        }
    }

    @Test func severalExpiredSnapshotsAreRemovedAndNextIsLinkedAfresh() throws {
        try withTestDirectorySync { dir in
            let tree = SnapshotTree(root: dir)
            let ids = (1...4).map { String(format: "%06d-20261101T000000Z", $0) }
            for id in ids { file(tree.folder + "/" + id + "/f.bin", id) }
            try FileManager.default.createSymbolicLink(
                atPath: dir + "/current", withDestinationPath: ".jgmirror/snapshots/" + ids[3])
            let prepared = try tree.prepare(keep: 2, pool: WorkPool(computingThreads: 1)) { _ in }
            #expect(Set(prepared.pruned) == Set(ids.prefix(2)))
            #expect(tree.ids() == Array(ids.suffix(2)))
            #expect(listing(tree.building) == listing(tree.folder + "/" + ids[3]))
            #expect(prepared.linked.map(\.dest) == ["f.bin"])
        }
    }
}
