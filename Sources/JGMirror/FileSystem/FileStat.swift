import Foundation

/// What `stat` says about a file, as far as telling a changed file from an unchanged
/// one goes (git's index keeps the same fields).
public struct FileStat: Sendable, Equatable {
    public var size: Int64
    /// Modification time, nanoseconds since the epoch.
    public var mtimeNs: Int64
    /// Status-change time, nanoseconds since the epoch: any write, rename or chmod moves it.
    public var ctimeNs: Int64
    public var inode: UInt64
    public var device: UInt64

    public init(size: Int64, mtimeNs: Int64, ctimeNs: Int64, inode: UInt64, device: UInt64) {
        self.size = size
        self.mtimeNs = mtimeNs
        self.ctimeNs = ctimeNs
        self.inode = inode
        self.device = device
    }

    init(_ info: stat) {
        size = Int64(info.st_size)
        mtimeNs = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        ctimeNs = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
        inode = UInt64(info.st_ino)
        device = UInt64(info.st_dev)
    }

    /// The stat of a regular file at `path` (symlinks followed, as the item's reads do);
    /// nil when it is missing or not a regular file.
    static func of(path: String) -> FileStat? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileStat(info)
    }
}
