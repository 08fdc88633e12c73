import GRDB

/// What the state database keeps for `keep_removed` (docs/deletions.md#grace-period):
/// each file that no item produces any more, and since when, as the `--delete` runs
/// that found it absent saw it.
extension StateStore {
    /// Since when (seconds since the epoch) each recorded file has been absent from
    /// every list; nil when the database cannot be read (then each counts as absent
    /// since now, and stays its whole grace period).
    public func absences() -> [String: Int64]? {
        try? pool.read { db in
            var absences: [String: Int64] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT dest, since FROM absent")
            while let row = try rows.next() { absences[row[0]] = row[1] }
            return absences
        }
    }

    /// Records that the files at `absent` are absent at `now` (a file already recorded
    /// keeps its first time), and forgets every other recorded file outside `unseen`,
    /// folders the run did not look in (a set whose list failed): such a file is back
    /// in a list, or gone. In one transaction; returns the line for the report's
    /// warnings when it could not be written.
    @discardableResult
    func recordAbsences(_ absent: [String], now: Int64, unseen: [String]) -> String? {
        write { db in
            var recorded = Set<String>()
            let rows = try Row.fetchCursor(db, sql: "SELECT dest FROM absent")
            while let row = try rows.next() { recorded.insert(row[0]) }
            let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO absent (dest, since) VALUES (?, ?)")
            for dest in absent where !recorded.contains(dest) { try insert.execute(arguments: [dest, now]) }
            let present = recorded.subtracting(absent).filter { dest in !unseen.contains { dest.hasPrefix($0) } }
            let forget = try db.cachedStatement(sql: "DELETE FROM absent WHERE dest = ?")
            for dest in present { try forget.execute(arguments: [dest]) }
        }
    }
}
