import Foundation

/// The tree's state database and its records, opened by a job of the run's
/// `WorkPool` while a sync starts: what needs them waits for them (a present file's
/// look, what a run records), what does not goes ahead. A first run, whose files are all missing,
/// sends its first requests while the database is created (about 3 ms of the 25
/// before the first request, 2000 small files: bench/RESULTS.md, "Seventh round").
///
/// Its accessors block until the database is open: call them from the run's
/// `WorkPool`, never from Swift's shared threads. The opening is a blocking job of that
/// pool that waits for no other job, so a computing job (a hashed file recorded) may
/// wait for it.
final class StateOpening: Sendable {
    /// The database (none without a usable one), its records, and why it is not used
    /// when it is not.
    struct Opened: Sendable {
        var store: StateStore?
        var records: RecordTable
        var warnings: [String]

        /// No database this run: records are neither read nor written.
        static func none(warnings: [String] = []) -> Opened { Opened(store: nil, records: RecordTable(), warnings: warnings) }
    }

    private struct Progress: Sendable {
        var opened: Opened?
        /// `close` came before the database was open: it is closed once it is.
        var closeOnOpen = false
    }

    private let progress = Locked(Progress())
    private let done = DispatchGroup()

    /// Already open (or none).
    init(_ opened: Opened) {
        progress.withLock { $0.opened = opened }
    }

    /// Runs `open` as a blocking job of `pool`.
    init(on pool: WorkPool, opening open: @escaping @Sendable () -> Opened) {
        done.enter()
        pool.submit(.blocking) { [progress, done] in
            let result = open()
            let close = progress.withLock { progress -> Bool in
                progress.opened = result
                return progress.closeOnOpen
            }
            if close { result.store?.close() }
            done.leave()
        }
    }

    /// The database, once open; waits for it.
    var store: StateStore? { wait().store }

    /// Why the database is not used, or what was repaired; waits for it.
    var warnings: [String] { wait().warnings }

    /// The records, handed over once: later calls get an empty table, so the caller
    /// holds the only copy and can let it go. Waits for the database.
    func takeRecords() -> RecordTable {
        done.wait()
        return progress.withLock { progress in
            defer { progress.opened?.records = RecordTable() }
            return progress.opened?.records ?? RecordTable()
        }
    }

    /// Closes the database without waiting for it: now when it is open, else as soon
    /// as it is (a run that stops before it needed it).
    func close() {
        let store = progress.withLock { progress -> StateStore?? in
            guard let opened = progress.opened else {
                progress.closeOnOpen = true
                return nil
            }
            return .some(opened.store)
        }
        store??.close()
    }

    private func wait() -> Opened {
        done.wait()
        return progress.value.opened ?? .none()
    }
}
