import Foundation

/// Holds the records of files a run placed until the file system's clock has moved
/// past their timestamps, then hands them to the run's `RecordBatcher` as settled:
/// the next run's quick check trusts them at once, without reading a byte.
///
/// The racy rule (`FileRecord.isRacy`, git's) distrusts a record whose file changed
/// within `SyncOptions.racyWindow` of the moment it was recorded, because a write in
/// the same timestamp tick after the stat leaves size, mtime and ctime as recorded.
/// The window (2 s) is sized for the coarsest file systems and for clock steps, so a
/// file recorded a moment after its rename was always racy, and the next run hashed
/// it again (a 1 GiB file: 0.66 s).
///
/// Here the file system's own clock is read first (`RootDirectory.fileSystemTime`: the
/// timestamps of an unnamed file the run holds on that file system, touched, rounded
/// to its tick as any write's are), then the placed file is stat'ed again. When the stat is still the placed
/// one and its timestamps are older than that reading, the tick they fall in was
/// over before the stat: any later write gets a newer timestamp, so the stat alone
/// tells a change, whatever the file system's tick. Such a record's `verifiedAt` is
/// set past the racy window of its file's timestamps (the window's doubt is settled).
/// Files found in place, hashed, or answered `304` are recorded as before, under the
/// full window: this only concerns bytes this run wrote and renamed itself.
final class RecordSettling: Sendable {
    /// A placed file's record, waiting for the clock.
    private struct Waiting: Sendable {
        var record: FileRecord
        /// Where the file is (`PlannedItem.path`).
        var path: String
    }

    private let root: RootDirectory
    private let records: RecordBatcher
    /// The quick check's racy window, nanoseconds.
    private let windowNs: Int64
    private let waiting = Locked<[Waiting]>([])
    /// When the file system's clock was last read (`FileRecord.now()`): at most once a
    /// millisecond while files are being placed, so that a run of many small files
    /// does not touch the clock file and stat its files again per placement.
    private let lastLook = Locked<Int64>(0)
    /// One unnamed file per file system (by device) to read its clock with, held open
    /// for the run; -1 where none could be made.
    private let clockFiles = Locked<[UInt64: Int32]>([:])

    /// How long the end of a run waits, at most, for the clock to pass the last
    /// placed files' timestamps: a few ticks of the coarsest common kernel clock
    /// (100 Hz). Files still waiting then are recorded as racy, as before.
    static let finalWaitNs: Int64 = 50_000_000

    init(root: RootDirectory, records: RecordBatcher, windowNs: Int64) {
        self.root = root
        self.records = records
        self.windowNs = windowNs
    }

    deinit {
        for fd in clockFiles.value.values where fd >= 0 { close(fd) }
    }

    /// The clock of the file system `entry` is on, read now; nil where it cannot be.
    private func clock(for entry: Waiting) -> Int64? {
        let device = entry.record.stat.device
        let fd = clockFiles.withLock { files -> Int32 in
            if let fd = files[device] { return fd }
            let fd = root.openClockFile(beside: entry.path) ?? -1
            files[device] = fd
            return fd
        }
        return fd >= 0 ? RootDirectory.fileSystemTime(of: fd) : nil
    }

    /// Takes the records of files just placed at `paths`.
    func add(_ placed: [(record: FileRecord, path: String)]) {
        guard !placed.isEmpty else { return }
        waiting.withLock { $0 += placed.map { Waiting(record: $0.record, path: $0.path) } }
        let now = FileRecord.now()
        let look = lastLook.withLock { last -> Bool in
            guard now - last >= 1_000_000 else { return false }
            last = now
            return true
        }
        if look { settle() }
    }

    /// Records every waiting file, waiting up to `finalWaitNs` for the clock to pass
    /// the newest of them; blocks. Called once the run's files are all placed.
    func finish() {
        let deadline = FileRecord.now() + Self.finalWaitNs
        while settle() > 0, FileRecord.now() < deadline { usleep(1000) }
        let left = waiting.withLock { waiting in
            defer { waiting = [] }
            return waiting
        }
        records.add(left.map(\.record))
    }

    /// Records the waiting files whose timestamps the file system's clock has passed;
    /// returns how many still wait.
    @discardableResult
    private func settle() -> Int {
        let taken = waiting.withLock { waiting in
            defer { waiting = [] }
            return waiting
        }
        guard !taken.isEmpty else { return 0 }
        // The clock is read before the files are stat'ed again: one reading per file
        // system, as a folder below the root may be another with another tick.
        var clocks: [UInt64: Int64?] = [:]
        var settled: [FileRecord] = []
        var still: [Waiting] = []
        for entry in taken {
            let clock: Int64?
            if let known = clocks[entry.record.stat.device] {
                clock = known
            } else {
                clock = self.clock(for: entry)
                clocks[entry.record.stat.device] = clock
            }
            guard let clock else {
                // No way to read the clock here: recorded as before, racy.
                settled.append(entry.record)
                continue
            }
            guard let info = root.status(entry.path), FileStat(info) == entry.record.stat else {
                // Changed or gone since its placement: the record no longer matches it,
                // and the next run hashes whatever is there.
                settled.append(entry.record)
                continue
            }
            let newest = max(entry.record.stat.mtimeNs, entry.record.stat.ctimeNs)
            guard newest < clock else {
                still.append(entry)
                continue
            }
            var record = entry.record
            if record.verifiedAt != nil { record.verifiedAt = max(record.verifiedAt ?? 0, newest + windowNs + 1) }
            settled.append(record)
        }
        records.add(settled)
        if !still.isEmpty { waiting.withLock { $0 += still } }
        return still.count
    }
}
