import Foundation

/// What a run learns about files (placed this run, hashed, or answered `304`),
/// written to the state database in batches of `size`, one transaction each, off the
/// caller's thread, and the rest at the end (`flush`).
///
/// A record not yet written when the process dies costs the next run a hash of its
/// file, never a wrong answer: a file whose record does not describe it is hashed.
/// A transaction per placed small file cost about as much as placing it.
final class RecordBatcher: Sendable {
    /// The database, waited for on the batcher's queue (`StateOpening`); nil: the
    /// records are dropped.
    private let store: @Sendable () -> StateStore?
    private let size: Int
    private let pending = Locked<[FileRecord]>([])
    private let writing = DispatchQueue(label: "jgmirror.records")
    /// Told the one line about a failed database write.
    private let warn: @Sendable (String) -> Void
    /// Told the size of each transaction (tests).
    private let saved: (@Sendable (Int) -> Void)?

    init(
        store: @escaping @Sendable () -> StateStore?, size: Int, warn: @escaping @Sendable (String) -> Void,
        saved: (@Sendable (Int) -> Void)? = nil
    ) {
        self.store = store
        self.size = max(1, size)
        self.warn = warn
        self.saved = saved
    }

    /// Queues `records`; a full batch is written on the batcher's own queue.
    func add(_ records: [FileRecord]) {
        guard !records.isEmpty else { return }
        let batches = pending.withLock { pending -> [[FileRecord]] in
            pending += records
            var full: [[FileRecord]] = []
            while pending.count >= size {
                full.append(Array(pending.prefix(size)))
                pending.removeFirst(size)
            }
            return full
        }
        for batch in batches { writing.async { self.save(batch) } }
    }

    /// Writes what is queued once the batches under way are written; blocks.
    func flush() {
        writing.sync {}
        save(
            pending.withLock { pending in
                defer { pending = [] }
                return pending
            })
    }

    private func save(_ batch: [FileRecord]) {
        guard !batch.isEmpty, let store = store() else { return }
        if let failure = store.save(batch) { warn(failure) }
        saved?(batch.count)
    }
}
