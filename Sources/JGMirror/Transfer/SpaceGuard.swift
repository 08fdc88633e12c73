import Foundation
import Synchronization

/// Keeps `--min-free` free (docs/safety.md#size-limits): refuses to reserve an announced length
/// that would not leave it, and stops a body of unknown length before it fills the disk
/// (a chunked or close-delimited response may never end, and nothing else bounds it
/// when the item has no `size` or `max_size`).
///
/// Asking the file system after every write would cost a system call per buffer, so
/// the guard asks once per `probeStep` bytes and lets writes run against what the
/// answer left over; other writers to the same file system are seen at the next ask.
/// The bodies of unknown length in flight at once share one `Ledger`, so that each
/// counts what the others may still write against the same free space.
struct SpaceGuard {
    /// What every body of unknown length in flight may still write before its guard
    /// asks the file system again. Each guard's room is what the file system has left,
    /// less the reserve, less what the others hold: two bodies never both spend the
    /// same free bytes (a small file system under the default `--min-free` was run
    /// full by two at once, each given the same room). One per engine, whatever file
    /// system each body is on: a tree over several mounts is counted as one, which
    /// errs on the side of stopping early.
    final class Ledger: Sendable {
        /// Bytes granted to all guards and not written yet.
        private let outstanding = Mutex<Int64>(0)

        init() {}

        /// Hands a guard holding `held` a new allowance: `decide` gets what the other
        /// guards hold and returns the new allowance, or nil to grant nothing (the
        /// guard keeps `held`). Decided under the lock, so two guards asking at once
        /// see each other's grants.
        func regrant(holding held: Int64, _ decide: (_ others: Int64) -> Int64?) -> Int64? {
            outstanding.withLock { total in
                guard let granted = decide(total - held) else { return nil }
                total += granted - held
                return granted
            }
        }

        /// `bytes` of a grant were written (or given back).
        func settle(_ bytes: Int64) {
            guard bytes != 0 else { return }
            outstanding.withLock { $0 -= bytes }
        }

        /// Bytes granted and not written, for tests.
        var held: Int64 { outstanding.withLock { $0 } }
    }

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

    /// The default reserve: 1 GiB (`Rules.minFree`), or 1 % of the file system when
    /// that is smaller.
    static func defaultReserve(total: Int64) -> Int64 { min(Rules.minFree.defaultValue, total / 100) }

    /// The space to leave free; nil takes `defaultReserve`.
    let minFree: Int64?
    let probe: Probe
    /// Shared with the guards of the other bodies in flight.
    let ledger: Ledger
    /// Bytes that may still be written before the next ask.
    private var allowance: Int64 = 0

    init(minFree: Int64?, probe: @escaping Probe, ledger: Ledger = Ledger()) {
        self.minFree = minFree
        self.probe = probe
        self.ledger = ledger
    }

    /// The body ended: what it was granted and did not write is free for the others.
    mutating func release() {
        ledger.settle(allowance)
        allowance = 0
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
        // More than the whole file system holds is no local shortage: the server's
        // length is wrong (or hostile), and another disk would not help.
        if length > space.total {
            return .tooLarge(
                "the server announced \(length) bytes (\(Units.formatBytes(length))) for \(path), more than the file "
                    + "system holds (\(Units.formatBytes(space.total)) in all)")
        }
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
            ledger.settle(bytes)
            return nil
        }
        var refusal: (reserve: Int64, available: Int64)?
        let granted = ledger.regrant(holding: allowance) { others in
            guard let space = probe(fd) else {
                // A file system that cannot say (some FUSE mounts): write on, as before.
                return Self.probeStep
            }
            let reserve = reserve(on: space)
            // What the other bodies were granted is not written yet, so not gone from
            // `available`: it is theirs all the same.
            let room = space.available - reserve - max(0, others)
            guard room >= bytes else {
                refusal = (reserve, space.available)
                return nil
            }
            return min(room, Self.probeStep)
        }
        guard let granted else {
            let (reserve, available) = refusal ?? (0, 0)
            return TransferError(
                code: .diskFull,
                message: "stopped a download of unknown length at \(path): the file system would drop below "
                    + "\(Units.formatBytes(reserve)) free (\(Units.formatBytes(max(0, available))) left, counting the "
                    + "other downloads of unknown length; see --min-free, or give the item 'size' or 'max_size')")
        }
        allowance = granted - bytes
        ledger.settle(bytes)
        return nil
    }
}
