import Foundation

/// What a run learns about files (placed this run, hashed, or answered `304`),
/// written to the state database in batches of `size`, one transaction each, off the
/// caller's thread, and the rest at the end (`flush`).
///
/// A record not yet written when the process dies costs the next run a hash of its
/// file, never a wrong answer: a file whose record does not describe it is hashed.
/// A transaction per placed small file cost about as much as placing it.
final class RecordBatcher: Sendable {
    /// Writes one batch in one transaction.
    private struct Writer: Sendable {
        /// The database, waited for by the lane's job (`StateOpening`); nil: the records
        /// are dropped.
        let store: @Sendable () -> StateStore?
        /// Told the one line about a failed database write.
        let warn: @Sendable (String) -> Void
        /// Told the size of each transaction (tests).
        let saved: (@Sendable (Int) -> Void)?

        func save(_ batch: [FileRecord]) {
            guard !batch.isEmpty, let store = store() else { return }
            if let failure = store.save(batch) { warn(failure) }
            saved?(batch.count)
        }
    }

    private let size: Int
    private let pending = Locked<[FileRecord]>([])
    private let writer: Writer
    /// Full batches, written in order. Its job is a blocking one: it waits for the
    /// database to open.
    private let writing: WorkPool.Lane<[FileRecord]>

    init(
        on pool: WorkPool, store: @escaping @Sendable () -> StateStore?, size: Int, warn: @escaping @Sendable (String) -> Void,
        saved: (@Sendable (Int) -> Void)? = nil
    ) {
        self.size = max(1, size)
        let writer = Writer(store: store, warn: warn, saved: saved)
        self.writer = writer
        writing = WorkPool.Lane(on: pool) { batches in
            for batch in batches { writer.save(batch) }
        }
    }

    /// Queues `records`; a full batch is written by the batcher's lane.
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
        for batch in batches { writing.add(batch) }
    }

    /// Writes what is queued once the batches under way are written; blocks.
    func flush() {
        writing.wait()
        writer.save(
            pending.withLock { pending in
                defer { pending = [] }
                return pending
            })
    }
}
