import CLinux
import Foundation

/// Reusing the snapshot a run would prune as the base of the next one.
///
/// Linking every unchanged file into a fresh `next` and removing the expired snapshot
/// beside it costs two names per file each run (10,000 files: about 0.45 s of ext4
/// metadata before any download), and every link moves the file's ctime, so each record
/// must be brought up to date too. The expired snapshot already holds most of those
/// names, as hard links to the same inodes: renamed to `.cloning` and brought to the
/// current snapshot's state, it costs a look at each name and a change per name that
/// differs. Files it shares with the current snapshot are not touched at all, so their
/// ctime and their records stay as they are.
///
/// A reader that still holds the expired snapshot open (its folder as its working
/// directory, say) sees it change instead of vanish; either way it has held a snapshot
/// past `--keep`, which the layout never promised to keep.
extension SnapshotTree {
    /// Brings `target` to the state of `source`, name by name: every regular file the
    /// same inode (linked where it is not), every symlink the same target, every
    /// folder present, nothing else. Part files, resume state and quarantined bytes of
    /// `source` are left out, as a fresh link leaves them. Returns the files linked
    /// (their ctime moved); `step(.cloning)` is called at the first change.
    /// `entriesCarryInodes` overrides what the file system is known to do (tests).
    static func reuse(
        _ target: String, toMatch source: String, entriesCarryInodes: Bool? = nil, step: @escaping (Step) -> Void
    ) throws(SyncError) -> [Linked] {
        let sourceFolder = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard sourceFolder >= 0 else { throw .local("cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { close(sourceFolder) }
        let targetFolder = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard targetFolder >= 0 else { throw .local("cannot open \(target): \(String(cString: strerror(errno)))") }
        defer { close(targetFolder) }
        let device = Matcher.device(of: targetFolder)
        guard device != nil, Matcher.device(of: sourceFolder) == device else {
            throw .local("cannot reuse \(target): \(source) is on another file system")
        }
        var matcher = Matcher(
            source: source, target: target, step: step,
            entriesCarryInodes: entriesCarryInodes ?? Self.entriesCarryInodes(targetFolder), device: device)
        try matcher.match(source: sourceFolder, target: targetFolder, prefix: "")
        return matcher.linked
    }

    /// Whether the folder entries of the file system `fd` is on carry the inode number
    /// `stat` reports (`d_ino`): ext4, XFS, Btrfs, tmpfs, ZFS and F2FS do, so two names
    /// are compared without a `stat` each. Elsewhere (a FUSE file system may put
    /// anything there) every file is looked at.
    private static func entriesCarryInodes(_ fd: Int32) -> Bool {
        [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0x2FC1_2FC1, 0xF2F5_2010].contains(jg_filesystem_type(fd))
    }

    /// A name as the kernel has it, compared byte by byte: `String`'s `==` holds for
    /// two spellings of "é" (composed and not) that a file system keeps apart.
    private struct Name: Hashable {
        let text: String

        static func == (a: Name, b: Name) -> Bool { a.text.utf8.elementsEqual(b.text.utf8) }

        func hash(into hasher: inout Hasher) {
            for byte in text.utf8 { hasher.combine(byte) }
        }
    }

    /// One entry of a folder: its kind (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, or another) and
    /// its inode.
    private struct Entry {
        var kind: mode_t
        var inode: UInt64
    }

    /// Walks a source folder and its reused twin together.
    private struct Matcher {
        let source: String
        let target: String
        let step: (Step) -> Void
        let entriesCarryInodes: Bool
        /// The file system of both trees' top folders.
        let device: UInt64?
        var linked: [Linked] = []
        var changes = 0

        mutating func match(source: Int32, target folder: Int32, prefix: String) throws(SyncError) {
            var present: [Name: Entry] = [:]
            try forEachEntry(of: folder, at: prefix, in: target) { name, entry in present[Name(text: name)] = entry }
            try forEachEntry(of: source, at: prefix, in: self.source) { (name, entry) throws(SyncError) in
                guard [S_IFREG, S_IFDIR, S_IFLNK].contains(entry.kind),
                    entry.kind != S_IFREG || !DestinationPath.reservedSuffixes.contains(where: name.hasSuffix)
                else { return }
                let old = present.removeValue(forKey: Name(text: name))
                let kept = old.map { Self.same(entry, $0, name, in: source, folder) } ?? false
                if let old, !kept { try remove(name, old, in: folder, prefix: prefix) }
                switch entry.kind {
                case S_IFDIR:
                    if !kept {
                        guard mkdirat(folder, name, 0o755) == 0 else { throw failure(errno, "create", prefix + name) }
                        changed()
                    }
                    let from = openat(source, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard from >= 0 else { throw failure(errno, "open", prefix + name, in: self.source) }
                    defer { close(from) }
                    let into = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard into >= 0 else { throw failure(errno, "open", prefix + name) }
                    defer { close(into) }
                    // Inode numbers name a file within one file system only.
                    guard Self.device(of: from) == device, Self.device(of: into) == device else {
                        throw .local("cannot reuse \(target): \(prefix + name) is on another file system")
                    }
                    try match(source: from, target: into, prefix: prefix + name + "/")
                case S_IFLNK where !kept:
                    guard let link = Symlink.target(in: source, name), symlinkat(link, folder, name) == 0 else {
                        throw failure(errno, "create", prefix + name)
                    }
                    changed()
                case S_IFREG where !kept:
                    var info = stat()
                    guard fstatat(source, name, &info, AT_SYMLINK_NOFOLLOW) == 0, linkat(source, name, folder, name, 0) == 0
                    else { throw failure(errno, "link", prefix + name) }
                    linked.append(Linked(dest: prefix + name, before: FileStat(info), after: FileStat(info)))
                    changed()
                default:
                    break
                }
            }
            for (name, entry) in present { try remove(name.text, entry, in: folder, prefix: prefix) }
        }

        /// Whether `entry` of the reused folder already is `wanted`, the source's entry
        /// of that name: the same inode for a file, a folder for a folder, the same
        /// target for a symlink.
        private static func same(_ wanted: Entry, _ entry: Entry, _ name: String, in source: Int32, _ folder: Int32) -> Bool {
            guard wanted.kind == entry.kind else { return false }
            switch wanted.kind {
            case S_IFREG: return wanted.inode == entry.inode
            case S_IFDIR: return true
            case S_IFLNK:
                guard let wanted = Symlink.target(in: source, name), let present = Symlink.target(in: folder, name) else {
                    return false
                }
                return wanted.utf8.elementsEqual(present.utf8)
            default: return false
            }
        }

        private mutating func remove(_ name: String, _ entry: Entry, in folder: Int32, prefix: String) throws(SyncError) {
            if entry.kind == S_IFDIR {
                do {
                    try FileManager.default.removeItem(atPath: target + "/" + prefix + name)
                } catch {
                    throw .local("cannot remove \(target)/\(prefix)\(name): \(error.localizedDescription)")
                }
            } else if unlinkat(folder, name, 0) != 0 {
                throw failure(errno, "remove", prefix + name)
            }
            changed()
        }

        private mutating func changed() {
            changes += 1
            if changes == 1 { step(.cloning) }
        }

        private func failure(_ code: Int32, _ verb: String, _ relative: String, in folder: String? = nil) -> SyncError {
            .local("cannot \(verb) \(folder ?? target)/\(relative): \(String(cString: strerror(code)))")
        }

        /// Calls `body` with each entry of the folder open as `fd` (which stays open),
        /// looking at an entry only when its folder entry does not say what it is.
        private func forEachEntry(
            of fd: Int32, at prefix: String, in tree: String, _ body: (String, Entry) throws(SyncError) -> Void
        ) throws(SyncError) {
            let copy = dup(fd)
            guard copy >= 0, let dir = fdopendir(copy) else {
                if copy >= 0 { close(copy) }
                throw .local("cannot read \(tree)/\(prefix): \(String(cString: strerror(errno)))")
            }
            defer { closedir(dir) }
            rewinddir(dir)
            while let found = readdir(dir) {
                let name = withUnsafeBytes(of: found.pointee.d_name) { raw in
                    String(validatingCString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                // A name that is not UTF-8 is never linked (`TreeWalker`), nor can a
                // `String` name it back to the kernel: reusing gives up on such a tree.
                guard let name else { throw .local("cannot reuse \(tree)/\(prefix): a name there is not UTF-8") }
                if name == "." || name == ".." { continue }
                var entry = Entry(kind: Self.kind(of: found.pointee.d_type), inode: UInt64(found.pointee.d_ino))
                if entry.kind == 0 || (entry.kind == S_IFREG && !entriesCarryInodes) {
                    var info = stat()
                    guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                        throw .local("cannot look at \(tree)/\(prefix)\(name): \(String(cString: strerror(errno)))")
                    }
                    entry = Entry(kind: info.st_mode & S_IFMT, inode: UInt64(info.st_ino))
                }
                try body(name, entry)
            }
        }

        /// The kind a folder entry's `d_type` names; 0 when it does not say.
        private static func kind(of type: UInt8) -> mode_t {
            switch Int32(type) {
            case Int32(DT_REG): S_IFREG
            case Int32(DT_DIR): S_IFDIR
            case Int32(DT_LNK): S_IFLNK
            case Int32(DT_UNKNOWN): 0
            default: S_IFIFO  // or a socket or a device: never part of a snapshot
            }
        }

        static func device(of fd: Int32) -> UInt64? {
            var info = stat()
            return fstat(fd, &info) == 0 ? UInt64(info.st_dev) : nil
        }
    }
}
