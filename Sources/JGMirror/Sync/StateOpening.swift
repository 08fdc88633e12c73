import Foundation

/// The tree's state database and its records, opened on a thread of its own while a
/// sync starts: what needs them waits for them (a present file's look, what a run
/// records), what does not goes ahead. A first run, whose files are all missing,
/// sends its first requests while the database is created (4 ms of 15 before the
/// first request, 2000 small files: bench/RESULTS.md, "Seventh round").
final class StateOpening: Sendable {
    /// The database (none without a usable one), its records, and why it is not used
    /// when it is not.
    struct Opened: Sendable {
        var store: StateStore?
        var records: RecordTable
        var warnings: [String]
    }

    private let opened = Locked<Opened?>(nil)
    private let done = DispatchGroup()

    /// Already open (or none, `Opened(store: nil, records: RecordTable(), warnings: [])`).
    init(_ opened: Opened) {
        self.opened.withLock { $0 = opened }
    }

    /// Runs `open` on a thread of its own.
    init(opening open: @escaping @Sendable () -> Opened) {
        done.enter()
        Thread { [opened, done] in
            let result = open()
            opened.withLock { $0 = result }
            done.leave()
        }.start()
    }

    /// The database, once open; waits for it.
    var store: StateStore? { wait().store }

    /// Why the database is not used, or what was repaired; waits for it.
    var warnings: [String] { wait().warnings }

    /// The records, handed over once: later calls get an empty table, so the caller
    /// holds the only copy and can let it go. Waits for the database.
    func takeRecords() -> RecordTable {
        done.wait()
        return opened.withLock { opened in
            defer { opened?.records = RecordTable() }
            return opened?.records ?? RecordTable()
        }
    }

    private func wait() -> Opened {
        done.wait()
        return opened.value ?? Opened(store: nil, records: RecordTable(), warnings: [])
    }
}
