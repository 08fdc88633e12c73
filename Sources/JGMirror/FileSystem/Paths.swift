import Foundation

/// Path arithmetic on plain strings. (Foundation's `deletingLastPathComponent`
/// traps on some inputs, such as "-", on Linux.)
public enum Paths {
    /// jgmirror's own folder under a root (state database, lock, list cache): no item
    /// may be placed there.
    public static let stateFolder = ".jgmirror"

    /// The path with every link, `.` and `..` resolved (`realpath`); nil when a part of
    /// it is missing.
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Everything before the last `/`: "a/b" → "a", "/a" → "/", "a" → "".
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.utf8.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Everything after the last `/`.
    public static func lastComponent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.utf8.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.utf8.lastIndex(of: UInt8(ascii: "/")) else { return String(trimmed) }
        return String(trimmed[trimmed.utf8.index(after: slash)...])
    }

    /// What a file of this `st_mode` is, for messages: "a folder", "a FIFO"…
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a folder"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFLNK: "a symlink"
        default: "not a regular file"
        }
    }

    /// `fsync`s a folder, so the names created, renamed or removed in it are durable.
    static func syncFolder(_ folder: String) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
