import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

/// The state database, quick check, conditional refresh, prune and tree locks
/// (docs/state.md, docs/deletions.md): the suites inside, one file each, run one at a
/// time, so that fewer syncs run at once beside the timing-sensitive interrupt tests.
/// `--filter StateTests` runs them all.
@Suite(.serialized) enum StateTests {}

/// Counts the present files a run hashes (`SyncOptions.hashedFile`).
final class HashLog: Sendable {
    private let names = Locked<[String]>([])
    func add(_ dest: String) { names.withLock { $0.append(dest) } }
    var all: [String] { names.value }
}

/// A suite of `StateTests`: each instance has a `TestServer` of its own and a `body`
/// (20,000 bytes in every suite that conforms) to serve; the helpers below read and
/// change the state database behind a run's back.
protocol StateSuite {
    var server: TestServer { get }
    var body: [UInt8] { get }
}

extension StateSuite {
    /// A manifest of twelve items over three folders, each served with `body` at
    /// `prefix` and its number.
    func servedManifest(prefix: String) -> String {
        var lines = ["version: 1", "items:"]
        for index in 0..<12 {
            server.set("\(prefix)\(index)", TestServer.Route(body: body))
            lines.append("  - {url: \(server.url("\(prefix)\(index)")), dest: d\(index % 3)/f\(index).bin, sha256: \(sha(body))}")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Options with a racy window of `racy` seconds and a log of hashed files. A window
    /// is there to make records racy, placements' too: those are not settled then
    /// (`RecordSettling`, tested with the default window on its own).
    func options(racy: Double = 0, log: HashLog? = nil) -> SyncOptions {
        var options = testOptions()
        options.racyWindow = racy
        options.settlesPlacedRecords = racy == 0
        if let log { options.hashedFile = { log.add($0) } }
        return options
    }

    /// The records of the state database under `dir/mirror`, by destination.
    func records(_ dir: String) throws -> [String: FileRecord] {
        try StateStore.openExisting(root: dir + "/mirror")?.records() ?? [:]
    }

    /// The state database's path under `dir/mirror`.
    func database(_ dir: String) -> String { dir + "/mirror/.jgmirror/state.sqlite" }

    /// Replaces the stat on record for `dest`.
    func setRecordStat(_ dir: String, dest: String, to stat: FileStat) throws {
        let queue = try DatabaseQueue(path: database(dir))
        try queue.write { db in
            try db.execute(
                sql: "UPDATE file SET size = ?, mtime_ns = ?, ctime_ns = ?, inode = ?, device = ? WHERE dest = ?",
                arguments: [
                    stat.size, stat.mtimeNs, stat.ctimeNs, Int64(bitPattern: stat.inode), Int64(bitPattern: stat.device), dest,
                ])
        }
        try queue.close()
    }

    /// Replaces the SHA-512 on record for `dest`.
    func setRecordDigest(_ dir: String, dest: String, sha512: String) throws {
        let queue = try DatabaseQueue(path: database(dir))
        try queue.write { db in
            try db.execute(
                sql: "UPDATE file SET sha512 = ? WHERE dest = ?", arguments: [StateStore.digestBytes(sha512, count: 64), dest])
        }
        try queue.close()
    }

    /// Moves every record's verification and check time to `nanoseconds`.
    func setRecordTimes(_ dir: String, to nanoseconds: Int64) throws {
        let queue = try DatabaseQueue(path: database(dir))
        try queue.write {
            try $0.execute(sql: "UPDATE file SET verified_at = ?, checked_at = ?", arguments: [nanoseconds, nanoseconds])
        }
        try queue.close()
    }

    /// Runs `sql` outside any transaction GRDB would open (a test playing another program).
    static func run(_ sql: String, on queue: DatabaseQueue) throws {
        try queue.writeWithoutTransaction { try $0.execute(sql: sql) }
    }

    /// Changes the first byte in place and puts the modification time back.
    func flipFirstByteKeepingMtime(_ path: String) throws {
        var info = stat()
        stat(path, &info)
        let fd = open(path, O_RDWR)
        var byte: UInt8 = 0
        pread(fd, &byte, 1, 0)
        byte ^= 0xFF
        pwrite(fd, &byte, 1, 0)
        close(fd)
        var times = [info.st_atim, info.st_mtim]
        utimensat(AT_FDCWD, path, &times, 0)
    }
}
