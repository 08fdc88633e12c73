import GRDB

/// The state database's schema (docs/state.md#the-state-folder), one migration per
/// version.
extension StateStore {
    /// The schema's versions. Each migration is applied once, in order, in its own
    /// transaction; a database with an identifier this build does not know was written
    /// by a newer jgmirror.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1", migrate: createFiles)
        migrator.registerMigration("v2", migrate: addSHA512)
        migrator.registerMigration("v3", migrate: createLinks)
        migrator.registerMigration("v4", migrate: createSnapshots)
        migrator.registerMigration("v5", migrate: keySnapshotsByFolder)
        migrator.registerMigration("v6", migrate: createAbsent)
        return migrator
    }

    /// v6: the files no item produces any more, and since when (seconds since the
    /// epoch): `keep_removed` keeps each until its grace period is over
    /// (docs/deletions.md#grace-period).
    private static func createAbsent(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS absent (
                    dest TEXT PRIMARY KEY NOT NULL,
                    since INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    }

    /// v1: a record per file, WITHOUT ROWID: the destination is the key and is stored
    /// once (about 200 bytes a file, SHA-256 as 32 raw bytes). Databases made by earlier
    /// builds also hold an empty `remote` table that no version wrote or read: left as
    /// it is, so that no migration locks an older jgmirror out of the database.
    private static func createFiles(_ db: Database) throws {
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
                """)
    }

    /// v2: the SHA-512 of a file checked by an item's `sha512:` (64 raw bytes), so such an
    /// item is quick-checked too. Older rows have none: their files are hashed once more
    /// and recorded with it.
    private static func addSHA512(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE file ADD COLUMN sha512 BLOB")
    }

    /// v3: the symlinks `link:` items placed, so that `--delete` removes one no item makes
    /// any more, and never a link someone else made (docs/deletions.md#when-sync-deletes).
    private static func createLinks(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS link (
                    dest TEXT PRIMARY KEY NOT NULL,
                    target TEXT NOT NULL,
                    placed_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    }

    /// v4: the snapshots `--publish snapshot` published (`SnapshotTree`), so that a tree's
    /// history is known without reading its folders.
    private static func createSnapshots(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS snapshot (
                    id TEXT PRIMARY KEY NOT NULL,
                    published_at INTEGER NOT NULL,
                    files INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
    }

    /// v5: sets published as snapshots of their own: each snapshot is known by its folder
    /// ('' for the whole tree's, ending in '/' for a set's) and its id.
    private static func keySnapshotsByFolder(_ db: Database) throws {
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
}
