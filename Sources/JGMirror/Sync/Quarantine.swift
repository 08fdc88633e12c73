import Foundation

/// Where a sync keeps bytes that failed verification, for inspection:
/// `ROOT/.jgmirror/quarantine/<dest>`, in the state folder, never beside published
/// files, where a reader would be served them and a clean `--delete` run would have
/// to tell them from mirrored files (docs/safety.md#quarantine).
///
/// A copy there is replaced by the next one of the same destination. It is on the
/// root's file system, so a part file gets there with one `renameat`, through
/// descriptors, as everything below the root is reached.
final class Quarantine: Sendable {
    /// The folder's name in `ROOT/.jgmirror/`.
    static let folderName = "quarantine"
    /// What older versions named the bytes beside their destination (`DEST.jgbad`);
    /// a run moves any it finds here.
    static let legacySuffix = ".jgbad"

    /// `ROOT/.jgmirror/quarantine`.
    let path: String
    /// `ROOT/.jgmirror`, which the run holds: the quarantine's folders are made below it.
    private let state: RootDirectory

    /// The quarantine of the tree whose state folder (`ROOT/.jgmirror`) is `stateFolder`.
    init(stateFolder: String) throws(TransferError) {
        state = try RootDirectory(path: stateFolder)
        path = stateFolder + "/" + Self.folderName
    }

    /// Where the bytes of `dest` (relative to the root) are kept.
    func place(of dest: String) -> String { path + "/" + dest }

    /// Moves `name`, in the folder `from` (a descriptor), to the place of `dest`.
    func keep(_ name: String, in from: Int32, as dest: String) throws(TransferError) {
        let kept = place(of: dest)
        let to = try state.openFolder(Paths.parent(of: kept), create: true)
        defer { close(to) }
        guard renameat(from, name, to, Paths.lastComponent(of: kept)) == 0 else {
            throw .local(errno: errno, path: kept, doing: "cannot move rejected bytes to")
        }
    }

    /// Moves the file at `path` (below `root`) to the place of `dest`.
    func keep(_ path: String, in root: RootDirectory, as dest: String) throws(TransferError) {
        try root.withFolder(of: path) { (folder, name) throws(TransferError) in try keep(name, in: folder, as: dest) }
    }

    /// Moves the `DEST.jgbad` an older version left beside each of `items` into the
    /// quarantine (`listings`: what the items' folders held, so that a folder without
    /// one costs no look). Returns a line for the report's warnings per file moved or
    /// left.
    func adoptLegacyFiles(of items: [PlannedItem], listings: FolderListings, root: RootDirectory) -> [String] {
        var lines: [String] = []
        for item in items where !item.isLink && listings.names(at: item.path).mayHold(suffix: Self.legacySuffix) {
            let legacy = item.path + Self.legacySuffix
            guard let info = root.status(legacy), (info.st_mode & S_IFMT) == S_IFREG else { continue }
            do {
                try keep(legacy, in: root, as: item.dest)
                lines.append("moved \(legacy) to \(place(of: item.dest)): rejected bytes are kept out of the served tree")
            } catch {
                lines.append("cannot move \(legacy) out of the served tree (\(error.message))")
            }
        }
        return lines
    }
}
