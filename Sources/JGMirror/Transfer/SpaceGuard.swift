import Foundation

/// Keeps `--min-free` free (SPEC §10): refuses to reserve an announced length that
/// would not leave it, and stops a body of unknown length before it fills the disk
/// (a chunked or close-delimited response may never end, and nothing else bounds it
/// when the item has no `size` or `max_size`).
///
/// Asking the file system after every write would cost a system call per buffer, so
/// the guard asks once per `probeStep` bytes and lets writes run against what the
/// answer left over; other writers to the same file system are seen at the next ask.
struct SpaceGuard {
    /// What the file system holding a file says about its space.
    struct FreeSpace: Sendable, Equatable {
        /// Bytes an unprivileged writer may still use.
        var available: Int64
        /// The file system's size.
        var total: Int64
    }

    /// Asks about the file system of an open file; nil when it cannot say.
    typealias Probe = @Sendable (_ fd: Int32) -> FreeSpace?

    /// `fstatvfs`: what `df` shows as "Avail" (blocks left to unprivileged users).
    static let systemProbe: Probe = { fd in
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { return nil }
        let block = Int64(info.f_frsize)
        return FreeSpace(available: Int64(info.f_bavail) * block, total: Int64(info.f_blocks) * block)
    }

    /// Bytes written between two asks.
    static let probeStep: Int64 = 8 << 20

    /// The default reserve: 1 GiB, or 1 % of the file system when that is smaller.
    static func defaultReserve(total: Int64) -> Int64 { min(1 << 30, total / 100) }

    /// The space to leave free; nil takes `defaultReserve`.
    let minFree: Int64?
    let probe: Probe
    /// Bytes that may still be written before the next ask.
    private var allowance: Int64 = 0

    init(minFree: Int64?, probe: @escaping Probe) {
        self.minFree = minFree
        self.probe = probe
    }

    /// What must stay free on a file system with `space`: `minFree`, else the default.
    private func reserve(on space: FreeSpace) -> Int64 { minFree ?? Self.defaultReserve(total: space.total) }

    /// Whether a file of `length` announced bytes may have its space reserved in `fd`
    /// (the new part file at `path`): it must leave the reserve free, as a body of
    /// unknown length must. Refused before a block is taken, so that a mistaken or
    /// hostile length never fills the disk, not even for the moment a failed
    /// reservation would.
    func admitReservation(of length: Int64, fd: Int32, path: String) -> TransferError? {
        guard let space = probe(fd) else { return nil }
        let reserve = reserve(on: space)
        guard length > space.available - reserve else { return nil }
        return TransferError(
            code: .diskFull,
            message: "cannot reserve \(Units.formatBytes(length)) for \(path): the file system would drop below "
                + "\(Units.formatBytes(reserve)) free (\(Units.formatBytes(max(0, space.available))) left; see --min-free)")
    }

    /// Whether `count` more bytes may be written to `fd` (the file at `path`); the
    /// `disk_full` failure that stops the item when not.
    mutating func admit(_ count: Int, fd: Int32, path: String) -> TransferError? {
        let bytes = Int64(count)
        if allowance >= bytes {
            allowance -= bytes
            return nil
        }
        guard let space = probe(fd) else {
            // A file system that cannot say (some FUSE mounts): write on, as before.
            allowance = Self.probeStep
            return nil
        }
        let reserve = reserve(on: space)
        let room = space.available - reserve
        guard room >= bytes else {
            return TransferError(
                code: .diskFull,
                message: "stopped a download of unknown length at \(path): the file system would drop below "
                    + "\(Units.formatBytes(reserve)) free (\(Units.formatBytes(max(0, space.available))) left; see --min-free, "
                    + "or give the item 'size' or 'max_size')")
        }
        allowance = min(room, Self.probeStep) - bytes
        return nil
    }
}
