import CLinux
import Foundation

/// Symbolic links below the root: read, placed atomically, removed only while they
/// still point where jgmirror put them.
extension RootDirectory {
    /// The target of the symlink at `path` (its folder reached without following any);
    /// nil when nothing is there, not even its folder, or it is not a symlink. Throws
    /// `unsafe_path` when a folder on the way is a symlink, and the local error (such as
    /// `permission_denied`) when it cannot be read.
    func linkTarget(_ path: String) throws(TransferError) -> String? {
        do {
            return try readLink(path)
        } catch  where error.code == .ioError {
            return nil  // a folder on the way is missing (or a file): no link there
        }
    }

    func readLink(_ path: String) throws(TransferError) -> String? {
        try withFolder(of: path) { (folder, name) throws(TransferError) -> String? in
            guard let target = Symlink.target(in: folder, name) else {
                if errno == EINVAL || errno == ENOENT { return nil }
                throw .local(errno: errno, path: path, doing: "cannot read the link")
            }
            return target
        }
    }

    /// Places a symlink to `target` at `path` atomically: made as `temporary` (a name in
    /// the same folder), then renamed over `path`, so a reader sees the old entry or the
    /// new link, never neither. A file or link at `path` is replaced; an empty folder,
    /// which holds nothing to read, is removed first; a folder with anything in it is
    /// never touched (`unsafe_path`).
    func placeLink(_ path: String, target: String, temporary: String) throws(TransferError) {
        guard Paths.parent(of: temporary) == Paths.parent(of: path) else {
            throw Self.unsafe(temporary, "is not in the folder of \(path)")
        }
        try withFolder(of: path) { (folder, name) throws(TransferError) in
            let temporaryName = Paths.lastComponent(of: temporary)
            // A leftover of a run killed between the two steps is ours: replaced.
            if symlinkat(target, folder, temporaryName) != 0 {
                guard errno == EEXIST, unlinkat(folder, temporaryName, 0) == 0, symlinkat(target, folder, temporaryName) == 0
                else {
                    throw failure(errno, in: folder, name: temporaryName, path: temporary, doing: "cannot create the link")
                }
            }
            var moved = renameat(folder, temporaryName, folder, name) == 0
            // A link is never renamed over a folder; an empty one is only a name in the way.
            if !moved, errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST {
                if unlinkat(folder, name, AT_REMOVEDIR) == 0 {
                    moved = renameat(folder, temporaryName, folder, name) == 0
                } else {
                    let code = errno
                    unlinkat(folder, temporaryName, 0)
                    if code == ENOTEMPTY || code == EEXIST {
                        throw Self.unsafe(
                            path, "is a folder with files in it; jgmirror never replaces a folder's contents with a link")
                    }
                    throw .local(errno: code, path: path, doing: "cannot replace with a link")
                }
            }
            guard moved else {
                let code = errno
                unlinkat(folder, temporaryName, 0)
                throw .local(errno: code, path: path, doing: "cannot rename a link onto")
            }
        }
    }

    /// Removes the symlink at `path` when it still points at `target`; true when it was
    /// removed. A file, a folder, or a link to anything else is left alone.
    @discardableResult
    func removeLink(_ path: String, ifTarget target: String) throws(TransferError) -> Bool {
        guard try linkTarget(path) == target else { return false }
        return try withFolder(of: path) { (folder, name) throws(TransferError) in
            guard unlinkat(folder, name, 0) == 0 else {
                if errno == ENOENT { return false }
                throw .local(errno: errno, path: path, doing: "cannot delete")
            }
            return true
        }
    }

    /// Makes `path` a second name (a hard link) of the file at `target`, both below the
    /// root, atomically: linked as `temporary`, then renamed over `path`; `temporary` is
    /// removed when a step fails.
    func replaceWithLink(_ path: String, to target: String, temporary: String) throws(TransferError) {
        try withFolder(of: target) { (from, fromName) throws(TransferError) in
            try withFolder(of: temporary) { (to, toName) throws(TransferError) in
                unlinkat(to, toName, 0)
                guard linkat(from, fromName, to, toName, 0) == 0 else {
                    throw failure(errno, in: from, name: fromName, path: path, doing: "cannot link")
                }
            }
        }
        do { try rename(temporary, to: path) } catch {
            unlink(temporary)
            throw error
        }
    }
}
