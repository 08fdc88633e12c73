import Foundation
import GRDB

/// What the state database keeps about snapshot publishing (`SnapshotTree`).
extension StateStore {
    /// Brings the records of files just linked into a new snapshot up to date: the link
    /// is the same inode with a new ctime, so a record that vouched for the file before
    /// it (same stat, not racy) vouches for it after, and is trusted at once where the
    /// file system's clock has passed the new ctime (`SnapshotTree.Linked.settled`).
    /// Other records are left as they are, and their files are hashed.
    @discardableResult
    func refresh(linked: [SnapshotTree.Linked], racyWindowNs: Int64) -> String? {
        guard !linked.isEmpty, let known = try? records() else { return nil }
        var updated: [FileRecord] = []
        updated.reserveCapacity(linked.count)
        for entry in linked {
            guard var record = known[entry.dest], record.stat == entry.before,
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

    /// Records a published snapshot and forgets the pruned ones, in one transaction.
    @discardableResult
    func savePublished(_ id: String, files: Int, pruned: [String]) -> String? {
        write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO snapshot (id, published_at, files) VALUES (?, ?, ?)",
                arguments: [id, FileRecord.now(), files])
            for old in pruned { try db.execute(sql: "DELETE FROM snapshot WHERE id = ?", arguments: [old]) }
        }
    }

    /// The published snapshots on record, oldest first.
    public func snapshots() throws -> [String] {
        try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM snapshot ORDER BY id") }
    }
}
