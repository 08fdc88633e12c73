import CLinux
import Foundation

/// The mirror root, opened once; every file and folder below it is created, opened,
/// renamed and removed relative to that descriptor, never through a symlink
/// (docs/safety.md#confinement-to-the-root).
///
/// A check made before a write cannot stop a folder from being swapped for a symlink
/// between the check and the write. So no path below the root is ever handed to the
/// kernel whole: folders are resolved with `openat2` and `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS` where the kernel has it, otherwise one name at a time with
/// `openat(O_NOFOLLOW)`, and the last name is then opened, renamed or removed with an
/// `*at` call on that folder's descriptor. A symlink anywhere below the root fails the
/// operation with `unsafe_path`; the root itself may be reached through symlinks,
/// since the user named it.
///
/// (swift-system 1.8 has no public `openat`/`mkdirat`/`renameat`, so these are the
/// Glibc calls, plus `openat2` through `CLinux`.)
final class RootDirectory: Sendable {
    /// How folders below the root are resolved.
    enum Resolution: Sendable {
        /// One `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (Linux 5.6+).
        case openat2
        /// One `openat(O_NOFOLLOW)` per name: the fallback, equally strict.
        case componentWalk
    }

    /// The root as given, without a trailing `/`.
    let path: String
    /// `O_PATH` descriptor of the root.
    let fd: Int32
    let resolution: Resolution
    private let prefix: String

    /// Opens `path` (which must be a folder). `resolution` nil takes `openat2` when
    /// the kernel allows it.
    init(path: String, resolution: Resolution? = nil) throws(TransferError) {
        var trimmed = path
        while trimmed.utf8.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.path = trimmed
        prefix = trimmed == "/" ? "/" : trimmed + "/"
        fd = open(trimmed, jg_o_path | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .local(errno: errno, path: trimmed, doing: "cannot open the root") }
        self.resolution = resolution ?? (Self.kernelHasOpenat2 ? .openat2 : .componentWalk)
    }

    /// Whether `openat2` works here (Linux 5.6+, not filtered by a sandbox).
    static let kernelHasOpenat2: Bool = {
        let probe = jg_openat2_beneath(AT_FDCWD, ".", jg_o_path | O_DIRECTORY | O_CLOEXEC, 0)
        if probe >= 0 { close(probe) }
        return probe >= 0
    }()

    deinit { close(fd) }

    // MARK: Operations

    /// Opens the file at `path` (below the root) with `flags`; `O_NOFOLLOW` and
    /// `O_CLOEXEC` are always added.
    func openFile(_ path: String, flags: Int32, mode: mode_t = 0o644) throws(TransferError) -> Int32 {
        // One `openat2` of the whole path where the kernel has it; a failure is opened
        // again name by name below, which tells a symlink from a missing file.
        if resolution == .openat2, let relative = plainRelative(path), relative.contains(UInt8(ascii: "/")) {
            let file = jg_openat2_beneath(fd, String(Substring(relative)), flags | O_NOFOLLOW | O_CLOEXEC, UInt32(mode))
            if file >= 0 { return file }
        }
        return try withFolder(of: path) { (folder, name) throws(TransferError) in
            let file = openat(folder, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)
            guard file >= 0 else { throw failure(errno, in: folder, name: name, path: path, doing: "cannot open") }
            return file
        }
    }

    /// Opens the folder at `path` (the root itself, or below it) for reading, so it
    /// can be `fsync`ed; `create` makes it and any missing folder above it first.
    func openFolder(_ path: String, create: Bool = false) throws(TransferError) -> Int32 {
        let names = try components(of: path)
        return try folder(names[...], flags: O_RDONLY, create: create, path: path)
    }

    /// Makes the folder at `path` and every missing one above it (`mkdir -p`).
    func makeFolders(_ path: String) throws(TransferError) {
        close(try folder(components(of: path)[...], flags: jg_o_path, create: true, path: path))
    }

    /// `renameat` from `source` to `destination`, both below the root. A symlink at
    /// `destination` is replaced, never written through.
    func rename(_ source: String, to destination: String) throws(TransferError) {
        try withFolder(of: source) { (from, fromName) throws(TransferError) in
            try withFolder(of: destination) { (to, toName) throws(TransferError) in
                guard renameat(from, fromName, to, toName) == 0 else {
                    throw failure(errno, in: from, name: fromName, path: destination, doing: "cannot rename onto")
                }
            }
        }
    }

    /// Replaces the file at `path` with `data` atomically: written to `temporary`
    /// (created anew when `exclusive`, else truncated), `fsync`ed when `durable`, then
    /// renamed over `path`; the temporary file is removed when a step fails.
    func replaceFile(_ path: String, with data: Data, temporary: String, exclusive: Bool, durable: Bool) throws(TransferError) {
        let fd = try openFile(temporary, flags: O_WRONLY | O_CREAT | (exclusive ? O_EXCL : O_TRUNC))
        var failure = data.withUnsafeBytes { writeAll(fd, $0) }
        if failure == 0, durable, fsync(fd) != 0 { failure = errno }
        close(fd)
        guard failure == 0 else {
            unlink(temporary)
            throw .local(errno: failure, path: temporary, doing: "cannot write")
        }
        do { try rename(temporary, to: path) } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Writes `contents` as a new file at `path` that never has another name: an
    /// unnamed file in `path`'s folder (`O_TMPFILE`), linked in once written, so the
    /// name appears with every byte behind it. Returns the new file's status (zero
    /// when it cannot be read); nil, with nothing left behind, where the file system
    /// has no unnamed files or cannot link one, or something is at `path` already.
    func linkNewFile(_ contents: UnsafeRawBufferPointer, at path: String) throws(TransferError) -> stat? {
        try withFolder(of: path) { (folder, name) throws(TransferError) -> stat? in
            // A file there already (a refresh) is replaced through a part file: not
            // worth writing the body twice.
            var there = stat()
            if fstatat(folder, name, &there, AT_SYMLINK_NOFOLLOW) == 0 { return nil }
            let file = openat(folder, ".", jg_o_tmpfile | O_WRONLY | O_CLOEXEC, 0o644)
            guard file >= 0 else {
                if [EOPNOTSUPP, EISDIR, EINVAL].contains(errno) { return nil }
                throw failure(errno, in: folder, name: name, path: path, doing: "cannot create")
            }
            defer { close(file) }
            let written = writeAll(file, contents)
            guard written == 0 else { throw .local(errno: written, path: path, doing: "cannot write") }
            guard jg_link_open_file(file, folder, name) == 0 else {
                if [EEXIST, ENOENT, EPERM, EOPNOTSUPP, EXDEV].contains(errno) { return nil }
                throw failure(errno, in: folder, name: name, path: path, doing: "cannot create")
            }
            var info = stat()
            return fstat(file, &info) == 0 ? info : stat()
        }
    }

    /// An unnamed file (`O_TMPFILE`) in `path`'s folder, open for writing, to read that
    /// file system's clock with (`fileSystemTime(of:)`); it goes away when closed, or
    /// with the process. Nil where the file system has no unnamed files, or the folder
    /// cannot be reached. The caller closes it.
    func openClockFile(beside path: String) -> Int32? {
        let found = try? withFolder(of: path) { folder, _ -> Int32? in
            let file = openat(folder, ".", jg_o_tmpfile | O_WRONLY | O_CLOEXEC, 0o600)
            return file >= 0 ? file : nil
        }
        return found ?? nil
    }

    /// The file system's clock now, in nanoseconds since the epoch: the timestamps
    /// `futimens` gives `clockFile` (from `openClockFile`), rounded to that file
    /// system's tick exactly as a write's are. One file, touched again, rather than a
    /// new one each time: ext4 slows its file creation after many deletions.
    static func fileSystemTime(of clockFile: Int32) -> Int64? {
        guard futimens(clockFile, nil) == 0 else { return nil }
        var info = stat()
        guard fstat(clockFile, &info) == 0 else { return nil }
        let stat = FileStat(info)
        return max(stat.mtimeNs, stat.ctimeNs)
    }

    /// Removes the file at `path`; true when it was there and is gone.
    @discardableResult
    func unlink(_ path: String) -> Bool {
        (try? withFolder(of: path) { folder, name in unlinkat(folder, name, 0) == 0 }) ?? false
    }

    /// What is at `path`, the entry itself (a symlink is not followed); nil when
    /// nothing is there or a folder on the way is missing or unsafe.
    func status(_ path: String) -> stat? {
        (try? withFolder(of: path) { folder, name in Self.status(of: name, in: folder) }) ?? nil
    }

    /// What is at `path`; throws `unsafe_path` when it, or a folder on the way, is a
    /// symlink, and the `local` error when nothing is there.
    func fileStatus(_ path: String) throws(TransferError) -> stat {
        try withFolder(of: path) { (folder, name) throws(TransferError) in
            try Self.fileStatus(of: name, in: folder, path: path, root: self.path)
        }
    }

    /// The entry `name` in the open folder `folder` (a symlink is not followed); nil
    /// when nothing is there.
    static func status(of name: String, in folder: Int32) -> stat? {
        var info = stat()
        return fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// The entry `name` in the open folder `folder`, which is `path` below `root`:
    /// `unsafe_path` for a symlink, the `local` error when nothing is there.
    static func fileStatus(of name: String, in folder: Int32, path: String, root: String) throws(TransferError) -> stat {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw .local(errno: errno, path: path, doing: "cannot read")
        }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            throw unsafe(path, "is a symbolic link below the root \(root); jgmirror never follows one there")
        }
        return info
    }

    /// Removes the folder at `path` if it is empty; true when it was removed.
    @discardableResult
    func removeEmptyFolder(_ path: String) -> Bool {
        (try? withFolder(of: path) { folder, name in unlinkat(folder, name, AT_REMOVEDIR) == 0 }) ?? false
    }

    /// `fsync`s the folder at `path`, so the names created, renamed or removed in it
    /// are durable; best effort, like `Paths.syncFolder`.
    func syncFolder(_ path: String) {
        guard let folder = try? openFolder(path) else { return }
        fsync(folder)
        close(folder)
    }

    // MARK: Resolution

    /// The names of `path` below the root, or why it cannot be walked.
    func components(of path: String) throws(TransferError) -> [String] {
        if path == self.path { return [] }
        guard path.hasPrefix(prefix) else { throw Self.unsafe(path, "is not inside the root \(self.path)") }
        switch RootPath.components(String(path.dropFirst(prefix.count))) {
        case .success(let names): return names
        case .failure(.absolute): throw Self.unsafe(path, "is not inside the root \(self.path)")
        case .failure(.parent): throw Self.unsafe(path, "has a '..' component")
        case .failure(.nul): throw Self.unsafe(path, "has a NUL byte")
        }
    }

    /// Runs `body` with a descriptor of `path`'s folder and its last name: the root's
    /// own descriptor for a file directly below it, otherwise an `O_PATH` descriptor
    /// opened for the call and closed after it.
    func withFolder<T>(of path: String, _ body: (Int32, String) throws(TransferError) -> T) throws(TransferError) -> T {
        if let relative = plainRelative(path) {
            guard let slash = relative.lastIndex(of: UInt8(ascii: "/")) else { return try body(fd, String(Substring(relative))) }
            if resolution == .openat2 {
                let folder = jg_openat2_beneath(fd, String(Substring(relative[..<slash])), jg_o_path | O_DIRECTORY | O_CLOEXEC, 0)
                if folder >= 0 {
                    defer { close(folder) }
                    return try body(folder, String(Substring(relative[relative.index(after: slash)...])))
                }
                // Failed: the walk below names the reason (a symlink, a missing folder).
            }
        }
        let names = try components(of: path)
        guard let name = names.last else { throw Self.unsafe(path, "is the root itself, not a file below it") }
        let folder = try folder(names.dropLast(), flags: jg_o_path, create: false, path: path)
        defer { close(folder) }
        return try body(folder, name)
    }

    /// `path` below the root when it needs no cleaning: names that are neither empty,
    /// `.` nor `..`, and no NUL byte. Every destination the manifest makes is of this
    /// kind; anything else (and any refusal) goes through `components(of:)`.
    private func plainRelative(_ path: String) -> Substring.UTF8View? {
        let bytes = path.utf8
        guard bytes.count > prefix.utf8.count, bytes.starts(with: prefix.utf8) else { return nil }
        let relative = Substring(path).utf8.dropFirst(prefix.utf8.count)
        // The current name's length, and whether it is dots only (`.` and `..` are not plain).
        var length = 0
        var dotsOnly = true
        for byte in relative {
            if byte == 0 { return nil }
            if byte == UInt8(ascii: "/") {
                if length == 0 || (dotsOnly && length <= 2) { return nil }
                length = 0
                dotsOnly = true
            } else {
                length += 1
                if byte != UInt8(ascii: ".") { dotsOnly = false }
            }
        }
        return length == 0 || (dotsOnly && length <= 2) ? nil : relative
    }

    /// Opens the folder `names` lead to from the root, with `flags`, never through a
    /// symlink; `create` makes missing folders on the way.
    func folder(_ names: ArraySlice<String>, flags: Int32, create: Bool, path: String) throws(TransferError) -> Int32 {
        let open = flags | O_DIRECTORY | O_CLOEXEC
        if names.isEmpty {
            let own = openat(fd, ".", open)
            guard own >= 0 else { throw .local(errno: errno, path: self.path, doing: "cannot open") }
            return own
        }
        if resolution == .openat2 {
            let opened = jg_openat2_beneath(fd, names.joined(separator: "/"), open, 0)
            if opened >= 0 { return opened }
            let code = errno
            // A missing folder to create is made by the walk below, name by name.
            if !(code == ENOENT && create) {
                if code == ELOOP || code == EXDEV {
                    throw Self.unsafe(
                        path, "goes through a symbolic link below the root \(self.path); jgmirror never follows one there")
                }
                if code != ENOSYS && code != EPERM { throw .local(errno: code, path: path, doing: "cannot open the folder of") }
            }
        }
        var current = fd
        for (index, name) in names.enumerated() {
            let last = index == names.count - 1
            var next = openat(current, name, (last ? open : jg_o_path | O_DIRECTORY | O_CLOEXEC) | O_NOFOLLOW)
            if next < 0, errno == ENOENT, create {
                if mkdirat(current, name, 0o755) != 0, errno != EEXIST {
                    let code = errno
                    if current != fd { close(current) }
                    throw .local(errno: code, path: path, doing: "cannot create a folder for")
                }
                next = openat(current, name, (last ? open : jg_o_path | O_DIRECTORY | O_CLOEXEC) | O_NOFOLLOW)
            }
            if next < 0 {
                let error = failure(errno, in: current, name: name, path: path, doing: "cannot open the folder of")
                if current != fd { close(current) }
                throw error
            }
            if current != fd { close(current) }
            current = next
        }
        return current
    }

    /// The error for a failed call on `name` in `folder`: `unsafe_path` when the
    /// name is a symlink (`O_NOFOLLOW` answers ELOOP, or ENOTDIR with `O_DIRECTORY`).
    func failure(_ code: Int32, in folder: Int32, name: String, path: String, doing action: String) -> TransferError {
        if code == ELOOP || code == ENOTDIR {
            var info = stat()
            if fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
                return Self.unsafe(
                    path, "goes through the symbolic link '\(name)' below the root \(self.path); jgmirror never follows one there"
                )
            }
        }
        return .local(errno: code, path: path, doing: action)
    }

    static func unsafe(_ path: String, _ reason: String) -> TransferError {
        TransferError(code: .unsafePath, message: "\(path) \(reason)")
    }
}
