import CLinux
import Foundation

extension RootDirectory {
    /// Looks at names below the root folder by folder, for one thread at a time (the
    /// walk of a plan): the last folder's descriptor stays open, so the names of one
    /// folder, which a plan lists together, open it once rather than once each. A
    /// no-op sync of 100,000 files opened a folder per file (docs/state.md#the-quick-check).
    ///
    /// As safe as `status` and `fileStatus`: the folder is opened as they open it (no
    /// symlink followed, never leaving the root), and each name is looked at with
    /// `fstatat(AT_SYMLINK_NOFOLLOW)` on that descriptor. A folder swapped for a symlink
    /// after it was opened is still the folder it was.
    final class Cursor {
        private let root: RootDirectory
        /// The folder open now, by its path.
        private var open: (path: Substring, fd: Int32)?

        init(_ root: RootDirectory) { self.root = root }

        deinit { if let open { close(open.fd) } }

        /// What is at `path`, the entry itself; nil when nothing is there or a folder on
        /// the way is missing or unsafe (`RootDirectory.status`).
        func status(_ path: String) -> stat? {
            (try? withFolder(of: path) { folder, name in RootDirectory.status(of: name, in: folder) }) ?? nil
        }

        /// What is at `path`; throws `unsafe_path` when it, or a folder on the way, is a
        /// symlink, and the `local` error when nothing is there (`RootDirectory.fileStatus`).
        func fileStatus(_ path: String) throws(TransferError) -> stat {
            try withFolder(of: path) { (folder, name) throws(TransferError) in
                try RootDirectory.fileStatus(of: name, in: folder, path: path, root: root.path)
            }
        }

        /// Runs `body` with the descriptor of `path`'s folder, kept open for the next
        /// name in it, and `path`'s last name.
        private func withFolder<T>(of path: String, _ body: (Int32, String) throws(TransferError) -> T) throws(TransferError)
            -> T
        {
            guard let slash = path.lastIndex(of: "/") else { return try root.withFolder(of: path, body) }
            let folder = path[..<slash]
            let name = String(path[path.index(after: slash)...])
            if let open, open.path == folder { return try body(open.fd, name) }
            if let open { close(open.fd) }
            open = nil
            let names = try root.components(of: String(folder))
            let fd = try root.folder(names[...], flags: jg_o_path, create: false, path: path)
            open = (folder, fd)
            return try body(fd, name)
        }
    }
}
