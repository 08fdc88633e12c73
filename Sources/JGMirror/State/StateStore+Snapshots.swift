import Foundation
import GRDB

/// What the state database keeps about snapshot publishing (`SnapshotTree`).
extension StateStore {
    /// Brings the records of files just linked into a new snapshot up to date, and
    /// forgets the snapshots `SnapshotTree.prepare` removed. A link (and the removal
    /// of an old snapshot's link) leaves the inode, size and mtime as they were and
    /// moves the ctime, so a record that vouched for the file before (same stat, not
    /// racy) vouches for it after, and is trusted at once where the file system's
    /// clock has passed the new ctime (`SnapshotTree.Linked.settled`). Other records
    /// are left as they are, and their files are hashed.
    @discardableResult
    func refresh(_ prepared: SnapshotTree.Prepared, racyWindowNs: Int64) -> String? {
        if !prepared.pruned.isEmpty,
            let failure = write({ db in
                for id in prepared.pruned { try db.execute(sql: "DELETE FROM snapshot WHERE id = ?", arguments: [id]) }
            })
        {
            return failure
        }
        guard !prepared.linked.isEmpty, let known = try? records() else { return nil }
        var updated: [FileRecord] = []
        updated.reserveCapacity(prepared.linked.count)
        for entry in prepared.linked {
            var ctimeOnly = entry.after
            ctimeOnly.ctimeNs = entry.before.ctimeNs
            guard var record = known[entry.dest], record.stat == entry.before, ctimeOnly == entry.before,
                !FileRecord.isRacy(entry.before, recordedAt: record.verifiedAt ?? record.checkedAt, windowNs: racyWindowNs)
            else { continue }
            record.stat = entry.after
            if entry.settled {
                let settledAt = max(entry.after.mtimeNs, entry.after.ctimeNs) + racyWindowNs + 1
                if let verifiedAt = record.verifiedAt {
                    record.verifiedAt = max(verifiedAt, settledAt)
                } else {
                    record.checkedAt = max(record.checkedAt, settledAt)
                }
            }
            updated.append(record)
        }
        return save(updated)
    }

    /// Records a published snapshot.
    @discardableResult
    func savePublished(_ id: String, files: Int) -> String? {
        write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO snapshot (id, published_at, files) VALUES (?, ?, ?)",
                arguments: [id, FileRecord.now(), files])
        }
    }

    /// The published snapshots on record, oldest first.
    public func snapshots() throws -> [String] {
        try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM snapshot ORDER BY id") }
    }
}
