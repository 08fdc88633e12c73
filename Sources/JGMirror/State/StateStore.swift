import Foundation
import GRDB

/// The mirror's state database, `ROOT/.jgmirror/state.sqlite` (docs/state.md#the-state-folder):
/// what each destination looked like when it was last verified, the links `link:` items
/// placed, and the snapshots published. SQLite in WAL mode through GRDB, so shards of
/// one manifest that share a tree write to it at once (each write waits up to the busy
/// timeout for another).
///
/// The only type that knows about GRDB; the rest of the code sees records. Nothing in
/// it is ever needed for correctness: a record that is missing, stale or lost only
/// costs a re-hash or an unconditional request, so every failure here is reported as
/// one line and the run goes on without the database.
public final class StateStore: Sendable {
    /// `state.sqlite` inside the state folder.
    public static let fileName = "state.sqlite"

    /// The database file.
    public let path: String
    let pool: DatabasePool
    /// The first write failure, after which the store stops writing (one line, not one per batch).
    private let writeFailure = Locked<String?>(nil)

    private init(path: String, pool: DatabasePool) {
        self.path = path
        self.pool = pool
    }

    /// How opening went: a store (or none) and, when something was wrong, the one line
    /// that says what and what the run does about it.
    public struct Opening: Sendable {
        public var store: StateStore?
        public var warning: String?
    }

    /// Opens the database in `folder` (creating it when missing), migrating it to the
    /// current schema. A corrupted, truncated or garbage database is moved aside to
    /// `state.sqlite.damaged` and a new one started; a locked one, or one written by a
    /// newer jgmirror, is left alone and the run goes without. Either way every
    /// present file is hashed this run.
    public static func open(folder: String, busyTimeout: Double = 5) -> Opening {
        let path = folder + "/" + fileName
        // Shards of one tree start together: one at a time creates, migrates, checks
        // or repairs the database, so none sees another's half-made schema as damage.
        let guardFD = Foundation.open(folder + "/open.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if guardFD >= 0 { flock(guardFD, LOCK_EX) }
        defer { if guardFD >= 0 { Foundation.close(guardFD) } }
        do {
            return Opening(store: try connect(path: path, busyTimeout: busyTimeout), warning: nil)
        } catch StoreError.newerVersion {
            return Opening(
                store: nil,
                warning:
                    "state database \(path) was written by a newer jgmirror; not using it this run (every present file is hashed)"
            )
        } catch let error as DatabaseError where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode) {
            return Opening(
                store: nil,
                warning:
                    "state database \(path) is locked by another program; not using it this run (every present file is hashed)")
        } catch {
            let reason = describe(error)
            for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
            // Kept for a look, under a second name when something else holds the first
            // (a folder), else removed: a database left in place would never be rebuilt.
            let names: [String] = [path + ".damaged", path + ".damaged-\(Int(Date().timeIntervalSince1970))"]
            let kept = names.first { name in rename(path, name) == 0 }
            if kept == nil { unlink(path) }
            do {
                let store = try connect(path: path, busyTimeout: busyTimeout)
                return Opening(
                    store: store,
                    warning:
                        "state database \(path) is damaged (\(reason)); \(kept.map { "moved to \($0)" } ?? "removed") and rebuilt from the files (every present file is hashed)"
                )
            } catch {
                return Opening(
                    store: nil,
                    warning:
                        "state database \(path) is damaged (\(reason)) and cannot be rebuilt (\(describe(error))); every present file is hashed"
                )
            }
        }
    }

    /// Opens the database of the tree at `root` for reading when there is one that
    /// works (`plan`, `verify`); nil otherwise, with nothing repaired or created.
    public static func openExisting(root: String) -> StateStore? {
        let path = root + "/" + StateFolder.name + "/" + fileName
        guard access(path, F_OK) == 0 else { return nil }
        return try? connect(path: path, busyTimeout: 5)
    }

    private enum StoreError: Error {
        case newerVersion
    }

    private static func connect(path: String, busyTimeout: Double) throws -> StateStore {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout)
        configuration.label = "jgmirror.state"
        // No syncs of its own (they stall the part files' syncs on a journalling file
        // system): a power cut may lose the last records or damage the file, which
        // costs re-hashing, as the quick_check below finds a damaged file and it is rebuilt.
        // A page cache of 512 KiB a connection, not SQLite's 2 MiB: records are written
        // in batches, in the manifest's order, and read once by a scan, so a larger cache
        // only held a 100,000-item run's peak memory 1.8 MB higher.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF; PRAGMA cache_size = -1024") }
        let pool = try DatabasePool(path: path, configuration: configuration)
        let migrator = Self.migrator
        if try pool.read({ try migrator.hasBeenSuperseded($0) }) { throw StoreError.newerVersion }
        try migrator.migrate(pool)
        // Reading every page once finds a damaged file now rather than halfway through
        // the run; a 100,000-item database is read in a few tens of milliseconds.
        let problems = try pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        if problems != ["ok"] {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: problems.prefix(3).joined(separator: "; "))
        }
        return StateStore(path: path, pool: pool)
    }

    /// Closes the database now, so that the last connection's checkpoint of the WAL
    /// into the file is over when this returns rather than whenever the last
    /// reference goes away: a later run in the same process, or another program, would
    /// otherwise find the file busy, or see a file it replaced meanwhile overwritten by
    /// that checkpoint. Any use after this fails (and is reported as a write failure).
    public func close() { try? pool.close() }

    // MARK: Files

    /// Every file record, by destination.
    public func records() throws -> [String: FileRecord] {
        try pool.read { db in
            var records: [String: FileRecord] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT dest, size, mtime_ns, ctime_ns, inode, device, sha256, etag, last_modified, url, verified_at, checked_at,
                        sha512 FROM file
                    """)
            while let row = try rows.next() {
                let dest: String = row[0]
                let stat = Self.stat(row)
                let digest: Data? = row[6]
                let digest512: Data? = row[12]
                records[dest] = FileRecord(
                    dest: dest, stat: stat, sha256: digest.map { SHA256.hex($0) }, sha512: digest512.map { SHA256.hex($0) },
                    etag: row[7],
                    lastModified: row[8], url: row[9], verifiedAt: row[10], checkedAt: row[11])
            }
            return records
        }
    }

    /// Every file record, in the compact form a run looks records up in (no source URL).
    public func recordTable() throws -> RecordTable {
        try pool.read { db in
            // Sized first, so a large table is allocated once rather than grown by doubling.
            let size = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), total(length(CAST(dest AS BLOB)) + ifnull(length(sha512), 0) + ifnull(length(CAST(etag AS BLOB)), 0)
                        + ifnull(length(CAST(last_modified AS BLOB)), 0)) FROM file
                    """)
            var table = RecordTable(reservingCapacity: size?[0] ?? 0, bytes: Int(size?[1] ?? 0.0))
            // In the key's order, which the table keeps for its lookups.
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT dest, size, mtime_ns, ctime_ns, inode, device, sha256, etag, last_modified, verified_at, checked_at, sha512, url
                        FROM file ORDER BY dest
                    """)
            while let row = try rows.next() {
                let stat = Self.stat(row)
                let digest: Data? = row[6]
                let digest512: Data? = row[11]
                table.append(
                    dest: row[0], stat: stat, sha256: digest.map { [UInt8]($0) }, sha512: digest512.map { [UInt8]($0) },
                    etag: row[7],
                    lastModified: row[8], url: row[12], verifiedAt: row[9], checkedAt: row[10])
            }
            table.finish()
            return table
        }
    }

    /// The stat a file record keeps, from columns 1 to 5 of a `file` row (size, mtime,
    /// ctime, inode, device), as both readers select them.
    private static func stat(_ row: Row) -> FileStat {
        FileStat(
            size: row[1], mtimeNs: row[2], ctimeNs: row[3], inode: UInt64(bitPattern: row[4]),
            device: UInt64(bitPattern: row[5]))
    }

    /// Writes `records` in one transaction, replacing earlier records of their destinations.
    /// A failure is remembered and returned once; later writes are skipped.
    @discardableResult
    public func save(_ records: [FileRecord]) -> String? {
        guard !records.isEmpty else { return nil }
        return write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO file (dest, size, mtime_ns, ctime_ns, inode, device, sha256, etag, last_modified, url,
                        verified_at, checked_at, sha512) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            for record in records {
                let digest = record.sha256.flatMap { StateStore.digestBytes($0, count: 32) }
                let digest512 = record.sha512.flatMap { StateStore.digestBytes($0, count: 64) }
                try statement.execute(arguments: [
                    record.dest, record.stat.size, record.stat.mtimeNs, record.stat.ctimeNs,
                    Int64(bitPattern: record.stat.inode), Int64(bitPattern: record.stat.device), digest, record.etag,
                    record.lastModified, record.url, record.verifiedAt, record.checkedAt, digest512,
                ])
            }
        }
    }

    /// Forgets the records of `dests` (pruned files and links), and that they were
    /// absent, in one transaction.
    @discardableResult
    public func remove(_ dests: [String]) -> String? {
        guard !dests.isEmpty else { return nil }
        return write { db in
            let files = try db.cachedStatement(sql: "DELETE FROM file WHERE dest = ?")
            let links = try db.cachedStatement(sql: "DELETE FROM link WHERE dest = ?")
            let absent = try db.cachedStatement(sql: "DELETE FROM absent WHERE dest = ?")
            for dest in dests {
                try files.execute(arguments: [dest])
                try links.execute(arguments: [dest])
                try absent.execute(arguments: [dest])
            }
        }
    }

    // MARK: Links

    /// Every symlink a `link:` item placed and the target it was given, by destination.
    public func links() throws -> [String: String] {
        try pool.read { db in
            var links: [String: String] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT dest, target FROM link")
            while let row = try rows.next() { links[row[0]] = row[1] }
            return links
        }
    }

    /// Records the links `link:` items placed (or found in place), in one transaction;
    /// a file record of the same destination is dropped, since a link stands there now.
    @discardableResult
    public func saveLinks(_ links: [(dest: String, target: String)]) -> String? {
        guard !links.isEmpty else { return nil }
        return write { db in
            let save = try db.cachedStatement(sql: "INSERT OR REPLACE INTO link (dest, target, placed_at) VALUES (?, ?, ?)")
            let files = try db.cachedStatement(sql: "DELETE FROM file WHERE dest = ?")
            let now = FileRecord.now()
            for link in links {
                try save.execute(arguments: [link.dest, link.target, now])
                try files.execute(arguments: [link.dest])
            }
        }
    }

    /// Runs `body` in one write transaction unless an earlier write failed; returns
    /// the line describing this failure, the first time one happens.
    func write(_ body: @escaping (Database) throws -> Void) -> String? {
        guard writeFailure.withLock({ $0 == nil }) else { return nil }
        do {
            try pool.write(body)
            return nil
        } catch {
            let line = "cannot write state database \(path) (\(Self.describe(error))); later runs hash the files this run placed"
            return writeFailure.withLock { failure in
                guard failure == nil else { return nil }
                failure = line
                return line
            }
        }
    }

    /// `2 × count` hex digits as `count` bytes; nil for anything else.
    static func digestBytes(_ hex: String, count: Int) -> Data? {
        var hex = hex
        return hex.withUTF8 { digits -> Data? in
            guard digits.count == 2 * count else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            for index in 0..<count {
                guard let high = hexValue(digits[2 * index]), let low = hexValue(digits[2 * index + 1]) else { return nil }
                bytes[index] = high << 4 | low
            }
            return Data(bytes)
        }
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x61...0x66: digit - 0x61 + 10
        case 0x41...0x46: digit - 0x41 + 10
        default: nil
        }
    }

    private static func describe(_ error: Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}
