import GRDB

/// The state database's schema (docs/state.md#the-state-folder), one migration per
/// version.
extension StateStore {
    /// The schema's versions. Each migration is applied once, in order, in its own
    /// transaction; a database with an identifier this build does not know was written
    /// by a newer jgmirror.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // WITHOUT ROWID: the destination is the key and is stored once (about
            // 200 bytes a file, SHA-256 as 32 raw bytes).
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS file (
                        dest TEXT PRIMARY KEY NOT NULL,
                        size INTEGER NOT NULL,
                        mtime_ns INTEGER NOT NULL,
                        ctime_ns INTEGER NOT NULL,
                        inode INTEGER NOT NULL,
                        device INTEGER NOT NULL,
                        sha256 BLOB,
                        etag TEXT,
                        last_modified TEXT,
                        url TEXT,
                        verified_at INTEGER,
                        checked_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE IF NOT EXISTS remote (
                        url TEXT PRIMARY KEY NOT NULL,
                        etag TEXT,
                        last_modified TEXT,
                        checked_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v2") { db in
            // The SHA-512 of a file checked by an item's `sha512:` (64 raw bytes), so
            // such an item is quick-checked too. Older rows have none: their files are
            // hashed once more and recorded with it.
            try db.execute(sql: "ALTER TABLE file ADD COLUMN sha512 BLOB")
        }
        migrator.registerMigration("v3") { db in
            // The symlinks `link:` items placed, so that `--delete` removes one no item
            // makes any more, and never a link someone else made
            // (docs/deletions.md#when-sync-deletes).
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS link (
                        dest TEXT PRIMARY KEY NOT NULL,
                        target TEXT NOT NULL,
                        placed_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v4") { db in
            // The snapshots `--publish snapshot` published (`SnapshotTree`), so that a
            // tree's history is known without reading its folders.
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS snapshot (
                        id TEXT PRIMARY KEY NOT NULL,
                        published_at INTEGER NOT NULL,
                        files INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v5") { db in
            // Sets published as snapshots of their own: each snapshot is known by its
            // folder ('' for the whole tree's, ending in '/' for a set's) and its id.
            try db.execute(
                sql: """
                    CREATE TABLE snapshot_v5 (
                        folder TEXT NOT NULL,
                        id TEXT NOT NULL,
                        published_at INTEGER NOT NULL,
                        files INTEGER NOT NULL,
                        PRIMARY KEY (folder, id)
                    ) WITHOUT ROWID;
                    INSERT INTO snapshot_v5 SELECT '', id, published_at, files FROM snapshot;
                    DROP TABLE snapshot;
                    ALTER TABLE snapshot_v5 RENAME TO snapshot;
                    """)
        }
        migrator.registerMigration("v6") { db in
            // The files no item produces any more and since when (seconds since the
            // epoch): `keep_removed` keeps each until its grace period is over
            // (docs/deletions.md#grace-period).
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS absent (
                        dest TEXT PRIMARY KEY NOT NULL,
                        since INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        return migrator
    }
}
