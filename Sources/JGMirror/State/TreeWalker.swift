import Foundation

/// Walks a tree from a descriptor of its root with `openat`/`fdopendir`, never
/// following a symlink and never leaving the root (docs/safety.md#confinement-to-the-root). Entries
/// come as paths relative to the root; the file type is taken from `d_type` (with an `fstatat` that
/// does not follow links where the file system does not fill it in), so the walk
/// reads folders only, not one inode per file.
struct TreeWalker {
    enum Kind {
        case file
        case folder
        case symlink
        /// A FIFO, socket or device, or an entry whose name is not UTF-8 (no item can
        /// have it, and a `String` cannot name it back to the kernel): never touched.
        case other
    }

    /// What to do with a folder just found.
    enum Descent {
        case enter
        case skip
    }

    /// Calls `visit(relativePath, kind)` for every entry under `root`, depth first,
    /// folders before their contents; a folder is entered only when `visit` returns
    /// `.enter`. After a folder's contents, `leave(relativePath)` is called. Unreadable
    /// folders are skipped. Returns false when the root itself cannot be opened.
    @discardableResult
    static func walk(
        root: String, visit: (String, Kind) -> Descent, leave: (String) -> Void = { _ in }
    ) -> Bool {
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        walk(folder: fd, prefix: "", visit: visit, leave: leave)
        return true
    }

    /// Walks the folder open as `fd` (and closes it).
    private static func walk(folder fd: Int32, prefix: String, visit: (String, Kind) -> Descent, leave: (String) -> Void) {
        guard let dir = fdopendir(fd) else {
            close(fd)
            return
        }
        defer { closedir(dir) }
        var subfolders: [String] = []
        while let entry = readdir(dir) {
            let decoded = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(validatingCString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            let name: String
            let kind: Kind
            if let decoded {
                name = decoded
                if name == "." || name == ".." { continue }
                switch Int32(entry.pointee.d_type) {
                case Int32(DT_REG): kind = .file
                case Int32(DT_DIR): kind = .folder
                case Int32(DT_LNK): kind = .symlink
                case Int32(DT_UNKNOWN): kind = statKind(dirfd(dir), name)
                default: kind = .other
                }
            } else {
                // Not UTF-8: repaired (U+FFFD) for the path only, and never touched.
                name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                kind = .other
            }
            let path = prefix + name
            if case .folder = kind {
                if visit(path, .folder) == .enter { subfolders.append(name) }
            } else {
                _ = visit(path, kind)
            }
        }
        for name in subfolders {
            let child = openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 { walk(folder: child, prefix: prefix + name + "/", visit: visit, leave: leave) }
            leave(prefix + name)
        }
    }

    private static func statKind(_ dirfd: Int32, _ name: String) -> Kind {
        var info = stat()
        guard fstatat(dirfd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return .other }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .folder
        case S_IFLNK: return .symlink
        default: return .other
        }
    }
}
