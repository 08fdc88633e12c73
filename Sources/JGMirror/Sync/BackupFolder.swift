import Foundation

/// `--backup-dir DIR` (docs/deletions.md#backups): what a run deletes or replaces goes to
/// `DIR/<run start>/<path>` instead of away, so one `mv` undoes a bad run.
///
/// A deleted file is moved there with one `renameat`, so a kill at any moment leaves
/// it in the tree or in the backup, never in neither. A replaced file is hard-linked
/// there before the new one is renamed over it: readers of the tree never see the
/// name missing, and a kill between the two steps leaves the old bytes in both places.
/// Both need the backup on the root's file system, which the run checks first.
final class BackupFolder: Sendable {
    /// `DIR/<run start>`, made when the run starts.
    let path: String
    /// The folder at `path`: what is kept is linked or moved below it, never through
    /// a symlink, as in the tree itself.
    private let folder: RootDirectory

    /// Makes `DIR/<stamp>` for a run started at `started` (`DIR/<stamp>-2`, … when a run
    /// of the same second has one). Throws a usage error when `DIR` is the root or lies
    /// inside it, or is not on the file system of `root`, and a local one when it
    /// cannot be made.
    init(directory: String, root: String, started: Date) throws(SyncError) {
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        if let problem = Self.placeProblem(directory, root: root) { throw .usage(UsageError(problem)) }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .local("cannot create --backup-dir \(directory): \(error.localizedDescription)")
        }
        var rootInfo = stat()
        var backupInfo = stat()
        guard stat(root, &rootInfo) == 0, stat(directory, &backupInfo) == 0 else {
            throw .local("cannot read --backup-dir \(directory): \(String(cString: strerror(errno)))")
        }
        guard rootInfo.st_dev == backupInfo.st_dev else {
            throw .usage(
                UsageError(
                    "--backup-dir \(directory) is on another file system than the root \(root); files are moved there by rename, so it must be on the same one"
                ))
        }
        let stamp = Self.stamp(started)
        var made: String?
        for attempt in 1...100 where made == nil {
            let candidate = directory + "/" + stamp + (attempt == 1 ? "" : "-\(attempt)")
            if mkdir(candidate, 0o755) == 0 {
                made = candidate
            } else if errno != EEXIST {
                throw .local("cannot create \(candidate): \(String(cString: strerror(errno)))")
            }
        }
        guard let made else { throw .local("cannot create a folder for this run under --backup-dir \(directory)") }
        path = made
        do { folder = try RootDirectory(path: made) } catch { throw .local(error.message) }
    }

    /// Why `directory` cannot keep what a run of `root` deletes or replaces, or nil: the
    /// root itself (nothing would ever leave the tree, so `--delete` deletes nothing) or
    /// a folder inside it, through any symlink (what it keeps would be served as part of
    /// the mirror, and pruned by the next `--delete` run that does not name it)
    /// (docs/deletions.md#backups).
    static func placeProblem(_ directory: String, root: String) -> String? {
        guard let resolved = RootConfinement.resolvingMissing(directory),
            let resolvedRoot = RootConfinement.resolvingMissing(root), RootConfinement.isInside(resolved, resolvedRoot)
        else { return nil }
        let place = resolved == resolvedRoot ? "is the root \(root) itself" : "lies inside the root \(root)"
        return "--backup-dir \(directory) \(place): what it keeps would stay in the mirror, served to readers and "
            + "deleted by the next --delete run; choose a folder outside the root, on the same file system"
    }

    /// `20261127T031500Z`: sorts by time, and has no `:` for tools that read one as a host.
    static func stamp(_ date: Date) -> String {
        var time = time_t(date.timeIntervalSince1970)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// Moves `name` in the tree's folder `from` (a descriptor) to `relative` (a path
    /// relative to the root) here.
    func move(_ name: String, in from: Int32, as relative: String) throws(TransferError) {
        try keep(relative) { (to, toName) in renameat(from, name, to, toName) == 0 }
    }

    /// Hard-links `name` in the tree's folder `from` as `relative` here; the tree keeps it.
    func link(_ name: String, in from: Int32, as relative: String) throws(TransferError) {
        try keep(relative) { (to, toName) in linkat(from, name, to, toName, 0) == 0 }
    }

    /// Hard-links the regular file at `path` (below `root`), if there is one, here as
    /// `relative` before something else is renamed over it: a new file, a published
    /// list, a link (docs/deletions.md#backups).
    func keepReplaced(_ path: String, in root: RootDirectory, as relative: String) throws(TransferError) {
        let folder = try root.openFolder(Paths.parent(of: path))
        defer { close(folder) }
        let name = Paths.lastComponent(of: path)
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
        try link(name, in: folder, as: relative)
    }

    private func keep(_ relative: String, _ step: (Int32, String) -> Bool) throws(TransferError) {
        // `RootDirectory` takes whole paths, and checks they lie below it.
        let parent = Paths.parent(of: relative)
        let to = try folder.openFolder(parent.isEmpty ? path : path + "/" + parent, create: true)
        defer { close(to) }
        guard step(to, Paths.lastComponent(of: relative)) else {
            throw .local(errno: errno, path: relative, doing: "cannot keep in --backup-dir \(path)")
        }
    }

    /// Removes this run's folder when nothing was kept in it.
    func removeIfEmpty() { rmdir(path) }
}
