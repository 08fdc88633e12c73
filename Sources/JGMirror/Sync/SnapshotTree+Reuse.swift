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
    static func reuse(_ target: String, toMatch source: String, step: @escaping (Step) -> Void) throws(SyncError) -> [Linked] {
        let sourceFolder = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard sourceFolder >= 0 else { throw .local("cannot open \(source): \(String(cString: strerror(errno)))") }
        defer { close(sourceFolder) }
        let targetFolder = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard targetFolder >= 0 else { throw .local("cannot open \(target): \(String(cString: strerror(errno)))") }
        defer { close(targetFolder) }
        var matcher = Matcher(source: source, target: target, step: step)
        try matcher.match(source: sourceFolder, target: targetFolder, prefix: "")
        return matcher.linked
    }

    /// One entry of a folder, as `fstatat` sees it (symlinks not followed).
    private struct Entry {
        var info: stat
        var kind: mode_t { info.st_mode & S_IFMT }
    }

    /// Walks a source folder and its reused twin together.
    private struct Matcher {
        let source: String
        let target: String
        let step: (Step) -> Void
        var linked: [Linked] = []
        var changes = 0

        mutating func match(source: Int32, target folder: Int32, prefix: String) throws(SyncError) {
            let wanted = try Self.entries(of: source, at: prefix, in: self.source).filter { name, entry in
                [S_IFREG, S_IFDIR, S_IFLNK].contains(entry.kind)
                    && !(entry.kind == S_IFREG && SnapshotTree.leftBehind.contains(where: name.hasSuffix))
            }
            var kept = Set<String>()
            for (name, entry) in try Self.entries(of: folder, at: prefix, in: target) {
                if let wanted = wanted[name], Self.same(wanted, entry, name, in: source, folder) {
                    kept.insert(name)
                } else {
                    try remove(name, entry, in: folder, prefix: prefix)
                }
            }
            for (name, entry) in wanted {
                let isKept = kept.contains(name)
                switch entry.kind {
                case S_IFDIR:
                    if !isKept {
                        guard mkdirat(folder, name, 0o755) == 0 else { throw failure(errno, "create", prefix + name) }
                        changed()
                    }
                    let from = openat(source, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard from >= 0 else { throw failure(errno, "open", prefix + name, in: self.source) }
                    defer { close(from) }
                    let into = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard into >= 0 else { throw failure(errno, "open", prefix + name) }
                    defer { close(into) }
                    try match(source: from, target: into, prefix: prefix + name + "/")
                case S_IFLNK where !isKept:
                    guard let link = Self.readLink(source, name), symlinkat(link, folder, name) == 0 else {
                        throw failure(errno, "create", prefix + name)
                    }
                    changed()
                case S_IFREG where !isKept:
                    guard linkat(source, name, folder, name, 0) == 0 else { throw failure(errno, "link", prefix + name) }
                    linked.append(Linked(dest: prefix + name, before: FileStat(entry.info), after: FileStat(entry.info)))
                    changed()
                default:
                    break
                }
            }
        }

        /// Whether `entry` of the reused folder already is `wanted`, the source's entry
        /// of that name: the same inode for a file, a folder for a folder, the same
        /// target for a symlink.
        private static func same(_ wanted: Entry, _ entry: Entry, _ name: String, in source: Int32, _ folder: Int32) -> Bool {
            guard wanted.kind == entry.kind else { return false }
            switch wanted.kind {
            case S_IFREG: return wanted.info.st_ino == entry.info.st_ino && wanted.info.st_dev == entry.info.st_dev
            case S_IFDIR: return true
            case S_IFLNK: return readLink(source, name).map { $0 == readLink(folder, name) } ?? false
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

        /// The entries of the folder open as `fd` (which stays open), by name.
        static func entries(of fd: Int32, at prefix: String, in tree: String) throws(SyncError) -> [String: Entry] {
            let copy = dup(fd)
            guard copy >= 0, let dir = fdopendir(copy) else {
                if copy >= 0 { close(copy) }
                throw .local("cannot read \(tree)/\(prefix): \(String(cString: strerror(errno)))")
            }
            defer { closedir(dir) }
            rewinddir(dir)
            var found: [String: Entry] = [:]
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(validatingCString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                // A name that is not UTF-8 is never linked (`TreeWalker`), nor can a
                // `String` name it back to the kernel: reusing gives up on such a tree.
                guard let name else { throw .local("cannot reuse \(tree)/\(prefix): a name there is not UTF-8") }
                if name == "." || name == ".." { continue }
                var info = stat()
                guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                    throw .local("cannot look at \(tree)/\(prefix)\(name): \(String(cString: strerror(errno)))")
                }
                found[name] = Entry(info: info)
            }
            return found
        }

        static func readLink(_ folder: Int32, _ name: String) -> String? {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlinkat(folder, name, &buffer, buffer.count - 1)
            guard count >= 0 else { return nil }
            return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
