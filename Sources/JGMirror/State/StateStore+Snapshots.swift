import Foundation
import GRDB

/// A file linked into a new snapshot from the current one: its stat before and after
/// the link (the same inode; the link moved its ctime).
struct RelinkedFile: Sendable {
    var dest: String
    var before: FileStat
    var after: FileStat
    /// The file system's clock passed `after` while the file stayed as it is.
    var settled = false
}

/// What the state database keeps about snapshot publishing (`SnapshotTree` in Sync).
extension StateStore {
    /// Brings the records of files just linked into a new snapshot up to date, and
    /// forgets the snapshots removed (`pruned`). A link (and the removal
    /// of an old snapshot's link) leaves the inode, size and mtime as they were and
    /// moves the ctime, so a record that vouched for the file before (same stat, not
    /// racy) vouches for it after, and is trusted at once where the file system's
    /// clock has passed the new ctime (`settled`). Other records
    /// are left as they are, and their files are hashed.
    /// `scope` is the snapshots' (`SnapshotTree.scope`): "" for the whole tree's.
    @discardableResult
    func refresh(linked: [RelinkedFile], pruned: [String], scope: String = "", racyWindowNs: Int64) -> String? {
        if !pruned.isEmpty,
            let failure = write({ db in
                for id in pruned {
                    try db.execute(sql: "DELETE FROM snapshot WHERE folder = ? AND id = ?", arguments: [Self.folder(scope), id])
                }
            })
        {
            return failure
        }
        guard !linked.isEmpty else { return nil }
        // One statement per file, matching the record in SQL: no record is read into
        // memory (10,000 of them cost a tenth of a snapshot run read and written back).
        return write { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE file SET ctime_ns = ?1,
                        verified_at = CASE WHEN verified_at IS NOT NULL AND ?2 > 0 THEN max(verified_at, ?2) ELSE verified_at END,
                        checked_at = CASE WHEN verified_at IS NULL AND ?2 > 0 THEN max(checked_at, ?2) ELSE checked_at END
                    WHERE dest = ?3 AND size = ?4 AND mtime_ns = ?5 AND ctime_ns = ?6 AND inode = ?7 AND device = ?8
                        AND max(mtime_ns, ctime_ns) <= coalesce(verified_at, checked_at) - ?9
                    """)
            for entry in linked {
                var ctimeOnly = entry.after
                ctimeOnly.ctimeNs = entry.before.ctimeNs
                guard ctimeOnly == entry.before else { continue }
                let settledAt = entry.settled ? max(entry.after.mtimeNs, entry.after.ctimeNs) + racyWindowNs + 1 : 0
                try update.execute(arguments: [
                    entry.after.ctimeNs, settledAt, entry.dest, entry.before.size, entry.before.mtimeNs, entry.before.ctimeNs,
                    Int64(bitPattern: entry.before.inode), Int64(bitPattern: entry.before.device), racyWindowNs,
                ])
            }
        }
    }

    /// Records a published snapshot, and forgets those no longer on disk (`present`):
    /// a run killed while it retired one never got to say so.
    @discardableResult
    func savePublished(_ id: String, files: Int, present: [String], scope: String = "") -> String? {
        let folder = Self.folder(scope)
        return write { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO snapshot (folder, id, published_at, files) VALUES (?, ?, ?, ?)",
                arguments: [folder, id, FileRecord.now(), files])
            try Self.forget(db, folder: folder, keeping: Set(present + [id]))
        }
    }

    /// Forgets the snapshots of `scope` no longer on disk (`present`): a run that
    /// publishes nothing still tells the database what a killed run retired.
    @discardableResult
    func keepSnapshots(_ present: [String], scope: String = "") -> String? {
        write { db in try Self.forget(db, folder: Self.folder(scope), keeping: Set(present)) }
    }

    private static func forget(_ db: Database, folder: String, keeping kept: Set<String>) throws {
        for gone in try String.fetchAll(db, sql: "SELECT id FROM snapshot WHERE folder = ?", arguments: [folder])
        where !kept.contains(gone) {
            try db.execute(sql: "DELETE FROM snapshot WHERE folder = ? AND id = ?", arguments: [folder, gone])
        }
    }

    /// The published snapshots on record, oldest first: the whole tree's, or with
    /// `folder` (ending in `/`) those of the set published as snapshots of its own there.
    public func snapshots(folder: String = "") throws -> [String] {
        try pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM snapshot WHERE folder = ? ORDER BY id", arguments: [folder])
        }
    }

    /// How the database names the snapshots of `scope`: its folder, ending in `/`.
    private static func folder(_ scope: String) -> String { scope.isEmpty ? "" : scope + "/" }
}
