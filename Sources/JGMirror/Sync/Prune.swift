import Foundation

/// What `sync --delete` removes (docs/deletions.md#when-sync-deletes): regular files under the root
/// that no selected item produces, then the folders that are left empty and lead to no item.
///
/// Never touched: `.jgmirror/` folders (at any depth: a nested tree's state), the
/// part, resume and quarantine files of a live item, symlinks (neither removed nor
/// followed), FIFOs, sockets and devices, and whatever lies beside them.
public struct Prune: Sendable {
    /// A file to delete, relative to the root.
    public struct File: Sendable, Equatable {
        public var path: String
        public var size: Int64
    }

    /// Files to delete, in walk order.
    public var files: [File]
    /// Folders that are empty once the files are gone, deepest first.
    public var folders: [String]

    /// Walks `root` and finds what no item of `items` produces, except under `keeping`'s folders
    /// (`Manifest.distrustedFolders`; `""` keeps the whole root).
    /// `producing` names files a run makes besides its items (published lists).
    public static func plan(
        root: String, items: [PlannedItem], keeping kept: [String] = [], producing extra: [String] = []
    ) -> Prune {
        var produced = Set<String>()
        var itemFolders = Set<String>()
        produced.reserveCapacity(items.count * 5)
        for dest in extra {
            produced.insert(dest)
            var folder = Paths.parent(of: dest)
            while !folder.isEmpty, itemFolders.insert(folder).inserted { folder = Paths.parent(of: folder) }
        }
        for item in items {
            produced.insert(item.dest)
            for suffix in DestinationPath.reservedSuffixes { produced.insert(item.dest + suffix) }
            var folder = Paths.parent(of: item.dest)
            while !folder.isEmpty, itemFolders.insert(folder).inserted { folder = Paths.parent(of: folder) }
        }
        var files: [File] = []
        var folders: [String] = []
        // Folders holding something that stays.
        var occupied = Set<String>()
        func keep(_ path: String) {
            var folder = Paths.parent(of: path)
            while !folder.isEmpty, occupied.insert(folder).inserted { folder = Paths.parent(of: folder) }
        }
        let rootFD = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if rootFD >= 0 { close(rootFD) } }
        TreeWalker.walk(root: root) { path, kind in
            if kept.contains(where: { path.hasPrefix($0) }) {
                keep(path)
                return .skip
            }
            switch kind {
            case .folder:
                if Paths.lastComponent(of: path) == StateFolder.name {
                    keep(path)
                    return .skip
                }
                folders.append(path)
                return .enter
            case .file where !produced.contains(path):
                var info = stat()
                let size = fstatat(rootFD, path, &info, AT_SYMLINK_NOFOLLOW) == 0 ? Int64(info.st_size) : 0
                files.append(File(path: path, size: size))
            default:
                keep(path)
            }
            return .enter
        }
        let emptied = folders.filter { !occupied.contains($0) && !itemFolders.contains($0) }
        let deepestFirst = emptied.sorted {
            $0.utf8.count(where: { $0 == UInt8(ascii: "/") }) > $1.utf8.count(where: { $0 == UInt8(ascii: "/") })
        }
        return Prune(files: files, folders: deepestFirst)
    }

    /// The results of a run that deletes nothing: each file `delete_skipped`, with why.
    public func skipped(because reason: String) -> [ItemResult] {
        files.map {
            ItemResult(
                dest: $0.path, url: "", status: .deleteSkipped, bytes: $0.size,
                error: ItemError(code: .deleteSkipped, message: reason))
        }
    }

    /// Deletes the files, then the folders, each through a descriptor of its folder
    /// opened component by component from the root without following symlinks, and
    /// only while it is still a regular file (an empty folder). With `backup`, each
    /// file is moved there instead of removed. `deleted` is told, after each file it
    /// removed, how many it has removed so far.
    /// Returns a result per file: `deleted`, or `failed` with the reason.
    public func execute(root: String) -> [ItemResult] { execute(root: root, backup: nil) }

    func execute(root: String, backup: BackupFolder?, deleted: (Int) -> Void = { _ in }) -> [ItemResult] {
        var results: [ItemResult] = []
        results.reserveCapacity(files.count)
        var openFolders: [String: Int32] = [:]
        defer { for fd in openFolders.values where fd >= 0 { close(fd) } }
        func folder(_ relative: String) -> Int32 {
            if let fd = openFolders[relative] { return fd }
            let fd: Int32
            if relative.isEmpty {
                fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            } else {
                let parent = folder(Paths.parent(of: relative))
                fd =
                    parent < 0
                    ? -1 : openat(parent, Paths.lastComponent(of: relative), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            openFolders[relative] = fd
            return fd
        }
        var removed = 0
        for file in files {
            var result = ItemResult(dest: file.path, url: "", status: .deleted, bytes: file.size)
            let parent = folder(Paths.parent(of: file.path))
            let name = Paths.lastComponent(of: file.path)
            var info = stat()
            if parent < 0 || fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) != 0 {
                // Gone already, or its folder was replaced: nothing of ours to delete.
                if errno == ENOENT {
                    results.append(result)
                } else {
                    results.append(failure(file, errno, "cannot open the folder of"))
                }
                continue
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { continue }
            if let backup {
                do { try backup.move(name, in: parent, as: file.path) } catch {
                    results.append(failure(file, error))
                    continue
                }
            } else if unlinkat(parent, name, 0) != 0, errno != ENOENT {
                results.append(failure(file, errno, "cannot delete"))
                continue
            }
            result.bytes = Int64(info.st_size)
            results.append(result)
            removed += 1
            deleted(removed)
        }
        for path in folders {
            let parent = folder(Paths.parent(of: path))
            if let fd = openFolders.removeValue(forKey: path), fd >= 0 { close(fd) }
            // Fails, harmlessly, when something appeared in it meanwhile.
            if parent >= 0 { unlinkat(parent, Paths.lastComponent(of: path), AT_REMOVEDIR) }
        }
        return results
    }

    private func failure(_ file: File, _ code: Int32, _ doing: String) -> ItemResult {
        failure(file, .local(errno: code, path: file.path, doing: doing))
    }

    private func failure(_ file: File, _ error: TransferError) -> ItemResult {
        ItemResult(
            dest: file.path, url: "", status: .failed, bytes: file.size,
            error: ItemError(code: error.code, message: error.message))
    }
}
