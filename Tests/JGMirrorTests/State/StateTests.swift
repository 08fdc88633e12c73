import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

/// Counts the present files a run hashes (`SyncOptions.hashedFile`).
final class HashLog: Sendable {
    private let names = Locked<[String]>([])
    func add(_ dest: String) { names.withLock { $0.append(dest) } }
    var all: [String] { names.value }
}

/// The state database, quick check, conditional refresh, prune and tree locks (docs/state.md,
/// docs/deletions.md).
@Suite(.serialized) struct StateTests {
    let server: TestServer
    let body = TestServer.bytes(count: 20_000, seed: 131)

    init() throws { server = try TestServer() }

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

    func records(_ dir: String) throws -> [String: FileRecord] {
        try StateStore.openExisting(root: dir + "/mirror")?.records() ?? [:]
    }

    func database(_ dir: String) -> String { dir + "/mirror/.jgmirror/state.sqlite" }

    // MARK: Records and the quick check

    @Test func placedFilesAreRecordedWithStatHashAndValidators() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\"", lastModified: "Mon, 02 Nov 2026 10:00:00 GMT"))
        try await withTestDirectory { dir in
            let report = try await sync(manifest(url: server.url("/f"), sha256: sha(body)), in: dir, options: options())
            #expect(report.items.first?.status == .downloaded)
            let record = try #require(try records(dir)["out.bin"])
            var info = stat()
            stat(dir + "/mirror/out.bin", &info)
            #expect(record.stat == FileStat(info))
            #expect(record.sha256 == sha(body))
            #expect(record.etag == "\"v1\"" && record.lastModified == "Mon, 02 Nov 2026 10:00:00 GMT")
            #expect(record.url == server.url("/f") && record.verifiedAt != nil)
            #expect(!exists(dir + "/mirror/.jgmirror.lock") && exists(dir + "/mirror/.jgmirror/lock"))
        }
    }

    @Test func quickCheckTrustsTheRecordWithoutReadingAndRehashHashes() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options())
            let log = HashLog()
            let second = try await sync(yaml, in: dir, options: options(log: log))
            #expect(second.items.first?.status == .unchanged)
            #expect(second.items.first?.sha256Actual == sha(body))
            #expect(log.all.isEmpty)
            #expect(server.gets("/f").count == 1)
            var rehash = options(log: log)
            rehash.rehash = true
            let third = try await sync(yaml, in: dir, options: rehash)
            #expect(third.items.first?.status == .unchanged)
            #expect(log.all == ["out.bin"])
        }
    }

    @Test func sha512ItemsAreQuickCheckedToo() async throws {
        server.set("/f", TestServer.Route(body: body))
        server.set("/g", TestServer.Route(body: body))
        let sum512 = try await sha512(body)
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/f")), dest: only512.bin, sha512: \(sum512)}
                  - {url: \(server.url("/g")), dest: s256.bin, sha256: \(sha(body))}
                """
            #expect(try await sync(yaml, in: dir, options: options()).items.map(\.status) == [.downloaded, .downloaded])
            #expect(try records(dir)["only512.bin"]?.sha512 == sum512)
            // The download's streaming hash is SHA-256: both are known.
            #expect(try records(dir)["only512.bin"]?.sha256 == sha(body))
            let log = HashLog()
            let second = try await sync(yaml, in: dir, options: options(log: log))
            #expect(second.items.map(\.status) == [.unchanged, .unchanged])
            #expect(second.items.map(\.sha512Actual) == [sum512, nil])
            #expect(log.all.isEmpty)
            #expect(server.gets("/f").count == 1 && server.gets("/g").count == 1)
            // A record of another SHA-512 does not vouch: the file is hashed (and fetched again).
            try setRecordDigest(dir, dest: "only512.bin", sha512: String(repeating: "0", count: 128))
            var rehash = options(log: log)
            rehash.rehash = true
            let third = try await sync(yaml, in: dir, options: options(log: log))
            #expect(third.items.map(\.status) == [.unchanged, .unchanged])
            #expect(log.all == ["only512.bin"])
            _ = try await sync(yaml, in: dir, options: rehash)
            #expect(log.all.sorted() == ["only512.bin", "only512.bin", "s256.bin"])
        }
    }

    @Test func verifyRecordsTheSHA512ItChecksAndKeepsTheSHA256() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        let sum512 = try await sha512(body)
        try await withTestDirectory { dir in
            let path = write(manifest(url: server.url("/f"), extra: "sha512: \(sum512)"), to: "m.yaml", in: dir)
            #expect(try await execute(["sync", path, "--root", dir + "/mirror", "--progress", "none"]).status == 0)
            let before = try #require(try records(dir)["out.bin"])
            let verifying = FileRecord.now()
            #expect(try await execute(["verify", path, "--root", dir + "/mirror"]).status == 0)
            let after = try #require(try records(dir)["out.bin"])
            // Recorded again, and still trusted at once: a placement's settled
            // `verifiedAt` (`RecordSettling`) lies past this moment, and stays.
            #expect(after.verifiedAt! >= verifying && after.verifiedAt! >= before.verifiedAt!)
            #expect(after.sha512 == sum512 && after.sha256 == sha(body) && after.etag == "\"v1\"")
            // Verified, so the next sync trusts it without reading.
            let log = HashLog()
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let session = SyncSession(
                plan: Plan(manifest: try Manifest.load(path: path), options: planOptions), options: options(log: log))
            #expect(try await session.run().items.first?.status == .unchanged)
            #expect(log.all.isEmpty)
            try flipFirstByteKeepingMtime(dir + "/mirror/out.bin")
            #expect(try await execute(["verify", path, "--root", dir + "/mirror"]).status == 3)
            #expect(try records(dir)["out.bin"]?.sha512 != sum512)
        }
    }

    @Test func aVersion1DatabaseIsMigratedAndKeepsItsRecords() async throws {
        try await withTestDirectory { dir in
            let folder = dir + "/mirror/.jgmirror"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            // The first schema, as the first release wrote it.
            let queue = try DatabaseQueue(path: folder + "/" + StateStore.fileName)
            try await queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                        INSERT INTO grdb_migrations VALUES ('v1');
                        CREATE TABLE file (dest TEXT PRIMARY KEY NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                            ctime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, device INTEGER NOT NULL, sha256 BLOB, etag TEXT,
                            last_modified TEXT, url TEXT, verified_at INTEGER, checked_at INTEGER NOT NULL) WITHOUT ROWID;
                        CREATE TABLE remote (url TEXT PRIMARY KEY NOT NULL, etag TEXT, last_modified TEXT, checked_at INTEGER NOT NULL)
                            WITHOUT ROWID;
                        INSERT INTO file VALUES ('a.bin', 3, 10, 20, 30, 40, zeroblob(32), '"e"', NULL, 'https://e.org/a', 50, 60);
                        """)
            }
            try queue.close()
            let opening = StateStore.open(folder: folder)
            let store = try #require(opening.store)
            #expect(opening.warning == nil)
            let old = try #require(try store.records()["a.bin"])
            #expect(old.sha256 == String(repeating: "0", count: 64) && old.sha512 == nil && old.etag == "\"e\"")
            var record = old
            record.sha512 = String(repeating: "ab", count: 64)
            #expect(store.save([record]) == nil)
            #expect(try store.records()["a.bin"] == record)
            store.close()
        }
    }

    /// A new database holds the tables some code reads and writes, and nothing else.
    @Test func aNewDatabaseHoldsOnlyTheTablesInUse() async throws {
        try await withTestDirectory { dir in
            let opening = StateStore.open(folder: dir)
            let store = try #require(opening.store)
            let tables = try await store.pool.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            }
            #expect(tables == ["absent", "file", "grdb_migrations", "link", "snapshot"])
            store.close()
        }
    }

    @Test func racyTimestampIsRehashedOnceThenTrusted() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options(racy: 3600))
            // Placed moments ago: within the window of its own record, so hashed.
            let log = HashLog()
            #expect(try await sync(yaml, in: dir, options: options(racy: 3600, log: log)).items.first?.status == .unchanged)
            #expect(log.all == ["out.bin"])
            // Recorded again by that run, long after the file's timestamps: trusted.
            let later = HashLog()
            _ = try await sync(yaml, in: dir, options: options(racy: 0, log: later))
            #expect(later.all.isEmpty)
        }
    }

    /// The walk of the plan waits while the hashing window is full, and the records of
    /// what was hashed are written in batches during the run, the last at the end.
    @Test func rehashingIsWindowedAndRecordedInBatches() async throws {
        let yaml = servedManifest(prefix: "/w")
        try await withTestDirectory { dir in
            _ = try await sync(yaml, in: dir, options: options(racy: 3600))
            let before = FileRecord.now()
            // Every record is racy, so every file is hashed; each hash waits until the walk
            // has found the window full (a run without a window never would: the wait
            // then gives up after 2 s and the test fails on `full`).
            let gate = DispatchSemaphore(value: 0)
            let full = Locked(false)
            let log = HashLog()
            var options = options(racy: 3600, log: log)
            options.hashWindow = 2
            options.learnedBatch = 5
            options.hashWindowFull = {
                if full.withLock({ full in
                    defer { full = true }
                    return !full
                }) {
                    gate.signal()
                }
            }
            let batches = Locked<[Int]>([])
            options.savedLearned = { count in batches.withLock { $0.append(count) } }
            let logged = options.hashedFile
            options.hashedFile = { dest in
                _ = gate.wait(timeout: .now() + 2)
                gate.signal()
                logged?(dest)
            }
            let report = try await sync(yaml, in: dir, options: options)
            #expect(full.value)
            #expect(report.items.allSatisfy { $0.status == .unchanged } && report.items.count == 12)
            #expect(Set(log.all).count == 12)
            #expect(batches.value == [5, 5, 2])
            let records = try records(dir)
            #expect(records.count == 12)
            #expect(records.values.allSatisfy { ($0.verifiedAt ?? 0) >= before })
        }
    }

    /// Placed files are recorded in batches across placements, not in a transaction
    /// per placement (which cost about as much as placing a small file), and every
    /// one is recorded by the end of the run.
    @Test func placedFilesAreRecordedInBatches() async throws {
        let yaml = servedManifest(prefix: "/p")
        try await withTestDirectory { dir in
            var options = options()
            options.learnedBatch = 5
            let batches = Locked<[Int]>([])
            options.savedLearned = { count in batches.withLock { $0.append(count) } }
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.status == .downloaded } && report.items.count == 12)
            #expect(batches.value == [5, 5, 2])
            let records = try records(dir)
            #expect(records.count == 12)
            #expect(records.values.allSatisfy { $0.sha256 == sha(body) })
        }
    }

    @Test func changedFileBehindTheRecordIsHashedAndRefetched() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options())
            let path = dir + "/mirror/out.bin"
            try flipFirstByteKeepingMtime(path)
            // The record claims to be newer than the change (a clock stepped back), so
            // the racy rule cannot tell: only the stat (the new ctime) does.
            try setRecordTimes(dir, to: FileRecord.now() + 3_600_000_000_000)
            let log = HashLog()
            let report = try await sync(yaml, in: dir, options: options(log: log))
            #expect(log.all == ["out.bin"])
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(path) == sha(body))
        }
    }

    @Test func verifyHashesAFlippedByteBehindAnUnchangedSizeAndMtime() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let path = write(manifest(url: server.url("/f"), sha256: sha(body)), to: "m.yaml", in: dir)
            let first = try await execute(["sync", path, "--root", dir + "/mirror", "--progress", "none"])
            #expect(first.status == 0)
            let verified = try await execute(["verify", path, "--root", dir + "/mirror"])
            #expect(verified.status == 0)
            let before = try #require(try records(dir)["out.bin"])
            try flipFirstByteKeepingMtime(dir + "/mirror/out.bin")
            let after = FileStat.of(path: dir + "/mirror/out.bin")
            #expect(after?.size == before.stat.size && after?.mtimeNs == before.stat.mtimeNs)
            let run = try await execute(["verify", path, "--root", dir + "/mirror", "--report", dir + "/r.json"])
            #expect(run.status == 3)
            let report = try loadReport(dir + "/r.json")
            #expect((report["items"] as? [[String: Any]])?.first?["status"] as? String == "mismatch")
            // verify records what it found: the record no longer vouches for the expected hash.
            #expect(try records(dir)["out.bin"]?.sha256 != sha(body))
        }
    }

    @Test func verifyRecordsWhatItVerified() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options())
            let before = try #require(try records(dir)["out.bin"])
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            let plan = Plan(manifest: try Manifest.load(path: dir + "/manifest.yaml"), options: planOptions)
            let verifying = FileRecord.now()
            #expect(try await Verification.run(plan: plan).exitCode == .success)
            let after = try #require(try records(dir)["out.bin"])
            // Recorded again, and still trusted at once: a placement's settled
            // `verifiedAt` (`RecordSettling`) lies past this moment, and stays.
            #expect(after.verifiedAt! >= verifying && after.verifiedAt! >= before.verifiedAt!)
            #expect(after.etag == "\"v1\"" && after.sha256 == sha(body))
        }
    }

    // MARK: Placed files are trusted at once

    /// Under the default racy window (2 s), the run right after a placement reads none
    /// of the files it placed (`RecordSettling`), whether they were synced in batches
    /// or written without syncs as unnamed files.
    @Test(arguments: [true, false])
    func aPlacedFileIsTrustedAtOnceByTheNextRun(durable: Bool) async throws {
        let yaml = servedManifest(prefix: durable ? "/synced" : "/unsynced")
        try await withTestDirectory { dir in
            var options = testOptions()
            options.durable = durable
            #expect(try await sync(yaml, in: dir, options: options).items.allSatisfy { $0.status == .downloaded })
            let log = HashLog()
            options.hashedFile = { log.add($0) }
            let report = try await sync(yaml, in: dir, options: options)
            #expect(report.items.allSatisfy { $0.status == .unchanged })
            #expect(log.all.isEmpty)
        }
    }

    /// A settled record stands only for the file as placed: a write right after the run
    /// (same size, other bytes) gets a newer timestamp than the recorded one, so the
    /// next run hashes the file and fetches it again.
    @Test func aWriteRightAfterAPlacementIsStillSeen() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: testOptions())
            let fd = open(dir + "/mirror/out.bin", O_WRONLY)
            var byte: UInt8 = ~body[0]
            #expect(pwrite(fd, &byte, 1, 0) == 1)
            close(fd)
            let log = HashLog()
            var options = testOptions()
            options.hashedFile = { log.add($0) }
            let report = try await sync(yaml, in: dir, options: options)
            #expect(log.all == ["out.bin"])
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    // MARK: Conditional refresh

    @Test func unchangedRemoteAnswers304WithNoBody() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"))
            #expect(try await sync(yaml, in: dir, options: options()).items.first?.status == .unverified)
            let report = try await sync(yaml, in: dir, options: options())
            let item = try #require(report.items.first)
            #expect(item.status == .unchanged && item.note == "not modified" && item.bytesDownloaded == 0)
            let requests = server.gets("/f")
            #expect(requests.count == 2)
            #expect(requests.last?.headers["if-none-match"] == "\"v1\"")
            #expect(server.responses("/f").last?.status == 304)
            #expect(server.responses("/f").last?.bodyBytes == 0)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(!exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    /// Every placement's record is taken moments after the file was written, so it is
    /// racy under the default window: the file's hash, checked against the record's,
    /// decides whether its ETag may be used (nginx answers an If-Modified-Since with the
    /// download time `200`, not `304`).
    @Test func racyRecordOfAnItemWithoutChecksumIsSettledByItsHash() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options(racy: 3600))
            let placed = try #require(try records(dir)["out.bin"])
            let log = HashLog()
            let second = try await sync(yaml, in: dir, options: options(racy: 3600, log: log))
            #expect(second.items.first?.status == .unchanged && second.items.first?.note == "not modified")
            #expect(log.all == ["out.bin"])
            #expect(server.gets("/f").last?.headers["if-none-match"] == "\"v1\"")
            #expect(server.responses("/f").last?.status == 304)
            #expect(try records(dir)["out.bin"]?.verifiedAt ?? 0 > placed.verifiedAt ?? 0)
            // An edit the stat cannot show (the record made to name the edited file's
            // stat, as a write in the same clock tick would): the hash catches it.
            try flipFirstByteKeepingMtime(dir + "/mirror/out.bin")
            let edited = try #require(FileStat.of(path: dir + "/mirror/out.bin"))
            try setRecordStat(dir, dest: "out.bin", to: edited)
            let third = try await sync(yaml, in: dir, options: options(racy: 3600))
            #expect(server.requests("/f").last?.headers["if-none-match"] == nil)
            #expect(third.items.first?.bytesDownloaded == Int64(body.count))
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    @Test func changedRemoteIsRefetchedAndRecorded() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options())
            let changed = TestServer.bytes(count: 30_000, seed: 132)
            server.set("/f", TestServer.Route(body: changed, etag: "\"v2\""))
            let report = try await sync(yaml, in: dir, options: options())
            #expect(report.items.first?.status == .unverified)
            #expect(report.items.first?.bytesDownloaded == 30_000)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(changed))
            #expect(server.requests("/f").last?.headers["if-none-match"] == "\"v1\"")
            #expect(try records(dir)["out.bin"]?.etag == "\"v2\"")
            // And the next run asks with the new validator.
            _ = try await sync(yaml, in: dir, options: options())
            #expect(server.responses("/f").last?.status == 304)
        }
    }

    @Test func localEditIsNotVouchedForByTheRecordedETag() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options())
            // Someone edits the mirrored file (same size); the record claims to be newer
            // than the edit (a clock stepped back), so only the stat shows it.
            try flipFirstByteKeepingMtime(dir + "/mirror/out.bin")
            try setRecordTimes(dir, to: FileRecord.now() + 3_600_000_000_000)
            let report = try await sync(yaml, in: dir, options: options())
            // The ETag described the file before the edit: asking with it would keep the edit.
            #expect(server.requests("/f").last?.headers["if-none-match"] == nil)
            #expect(report.items.first?.bytesDownloaded == Int64(body.count))
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        }
    }

    /// A file changed here after it was placed is not what the remote served, and a
    /// record of another URL says nothing about this one: either is fetched again,
    /// with no condition a server could answer `304` to (a file written now is always
    /// newer than the remote, and two releases can share an ETag).
    @Test func aLocalChangeOrANewURLIsFetchedAgainNotAskedByMtime() async throws {
        let old = "Thu, 01 Jan 2015 00:00:00 GMT"
        server.set("/f", TestServer.Route(body: body, etag: "\"same\"", lastModified: old))
        try await withTestDirectory { dir in
            let path = dir + "/mirror/out.bin"
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options())
            // Replaced by something else (another size), then overwritten in place (same size).
            for damage in [Array("LOCALLY CORRUPTED\n".utf8), TestServer.bytes(count: body.count, seed: 134)] {
                #expect(FileManager.default.createFile(atPath: path, contents: Data(damage)))
                let report = try await sync(yaml, in: dir, options: options())
                let last = try #require(server.requests("/f").last)
                #expect(last.headers["if-none-match"] == nil && last.headers["if-modified-since"] == nil)
                #expect(report.items.first?.status == .unverified && report.items.first?.bytesDownloaded == Int64(body.count))
                #expect(fileSHA(path) == sha(body))
            }
            // The same bytes again: still asked for conditionally, and kept.
            let kept = try await sync(yaml, in: dir, options: options())
            #expect(kept.items.first?.status == .unchanged && kept.items.first?.note == "not modified")
            // The item moves to another release with the same ETag, older than the file.
            let release = TestServer.bytes(count: 1000, seed: 135)
            server.set("/g", TestServer.Route(body: release, etag: "\"same\"", lastModified: old))
            let moved = try await sync(manifest(url: server.url("/g")), in: dir, options: options())
            let asked = try #require(server.requests("/g").last)
            #expect(asked.headers["if-none-match"] == nil && asked.headers["if-modified-since"] == nil)
            #expect(moved.items.first?.bytesDownloaded == 1000 && fileSHA(path) == sha(release))
        }
    }

    /// `verify` cannot vouch for what only a sync learns about an item without a
    /// checksum (which bytes came from which URL): after it, a moved item and a file
    /// changed here are still fetched again, unconditionally.
    @Test func verifyLeavesAnItemWithoutChecksumToBeFetchedAgain() async throws {
        let old = "Thu, 01 Jan 2015 00:00:00 GMT"
        server.set("/f", TestServer.Route(body: body, etag: "\"same\"", lastModified: old))
        let release = TestServer.bytes(count: 1000, seed: 136)
        server.set("/g", TestServer.Route(body: release, etag: "\"same\"", lastModified: old))
        try await withTestDirectory { dir in
            let path = dir + "/mirror/out.bin"
            func verify(_ yaml: String) async throws {
                var planOptions = PlanOptions()
                planOptions.root = dir + "/mirror"
                let manifest = try Manifest.load(path: write(yaml, to: "verify.yaml", in: dir))
                _ = try await Verification.run(plan: Plan(manifest: manifest, options: planOptions))
            }
            _ = try await sync(manifest(url: server.url("/f")), in: dir, options: options())
            let moved = manifest(url: server.url("/g"))
            try await verify(moved)
            let fetched = try await sync(moved, in: dir, options: options())
            let asked = try #require(server.requests("/g").last)
            #expect(asked.headers["if-none-match"] == nil && asked.headers["if-modified-since"] == nil)
            #expect(fetched.items.first?.bytesDownloaded == 1000 && fileSHA(path) == sha(release))
            #expect(FileManager.default.createFile(atPath: path, contents: Data("LOCAL EDIT".utf8)))
            try await verify(moved)
            let again = try await sync(moved, in: dir, options: options())
            #expect(server.requests("/g").last?.headers["if-modified-since"] == nil)
            #expect(again.items.first?.bytesDownloaded == 1000 && fileSHA(path) == sha(release))
        }
    }

    /// A file found in place, without a record, is fetched (never asked for by its
    /// mtime) and recorded with its hash; changed here later, it is fetched again
    /// rather than asked for by its new mtime.
    @Test func aFileFoundInPlaceAndChangedLaterIsFetchedAgain() async throws {
        try await withTestDirectory { dir in
            let path = dir + "/mirror/out.bin"
            write(String(decoding: body, as: UTF8.self), to: "mirror/out.bin", in: dir)
            server.set("/f", TestServer.Route(body: body, etag: "\"v1\"", lastModified: "Thu, 01 Jan 2015 00:00:00 GMT"))
            let yaml = manifest(url: server.url("/f"))
            let found = try await sync(yaml, in: dir, options: options())
            #expect(found.items.first?.bytesDownloaded == Int64(body.count))
            #expect(server.requests("/f").last?.headers["if-modified-since"] == nil)
            #expect(try records(dir)["out.bin"]?.sha256 == sha(body))
            #expect(FileManager.default.createFile(atPath: path, contents: Data("LOCAL EDIT".utf8)))
            let report = try await sync(yaml, in: dir, options: options())
            let last = try #require(server.requests("/f").last)
            #expect(last.headers["if-none-match"] == nil && last.headers["if-modified-since"] == nil)
            #expect(report.items.first?.bytesDownloaded == Int64(body.count) && fileSHA(path) == sha(body))
        }
    }

    /// Under `--rehash` the record does not vouch for an item without a checksum
    /// either: an edit its stat cannot show is found by the hash and fetched again.
    @Test func rehashHashesAnItemWithoutChecksumAgainstItsRecord() async throws {
        server.set("/f", TestServer.Route(body: body, etag: "\"v1\""))
        try await withTestDirectory { dir in
            let path = dir + "/mirror/out.bin"
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options())
            try flipFirstByteKeepingMtime(path)
            try setRecordStat(dir, dest: "out.bin", to: try #require(FileStat.of(path: path)))
            try setRecordTimes(dir, to: FileRecord.now() + 3_600_000_000_000)
            // Without --rehash the record vouches for the stat it names: the edit stays.
            let trusted = try await sync(yaml, in: dir, options: options())
            #expect(trusted.items.first?.status == .unchanged && fileSHA(path) != sha(body))
            var rehash = options()
            rehash.rehash = true
            let report = try await sync(yaml, in: dir, options: rehash)
            #expect(server.requests("/f").last?.headers["if-none-match"] == nil)
            #expect(report.items.first?.bytesDownloaded == Int64(body.count))
            #expect(fileSHA(path) == sha(body))
        }
    }

    @Test func lastModifiedAloneSendsIfModifiedSince() async throws {
        let stamp = "Tue, 03 Nov 2026 08:00:00 GMT"
        server.set("/f", TestServer.Route(body: body, lastModified: stamp))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"))
            _ = try await sync(yaml, in: dir, options: options())
            let report = try await sync(yaml, in: dir, options: options())
            #expect(report.items.first?.status == .unchanged)
            #expect(server.gets("/f").last?.headers["if-modified-since"] == stamp)
            #expect(server.requests("/f").last?.headers["if-none-match"] == nil)
        }
    }

    /// A file without a record (a damaged database rebuilt, a kill between placing and
    /// recording) is fetched again, never asked for by its own mtime: that is when
    /// jgmirror placed it, and a replacement published with an older mtime
    /// (`rsync -t`) would be answered 304 for ever (docs/sync.md#unchanged-files).
    @Test(arguments: [false, true])
    func fileWithoutARecordIsFetchedAgainNotAskedByItsMtime(rehash: Bool) async throws {
        try await withTestDirectory { dir in
            let stale = TestServer.bytes(count: 1000, seed: 132)
            write(String(decoding: stale, as: UTF8.self), to: "mirror/out.bin", in: dir)
            // Upstream replaced it with bytes whose Last-Modified is older than the local file.
            let stamp = "Thu, 01 Jan 2015 00:00:00 GMT"
            server.set("/f", TestServer.Route(body: body, lastModified: stamp))
            var runOptions = options()
            runOptions.rehash = rehash
            let yaml = manifest(url: server.url("/f"))
            let fetched = try await sync(yaml, in: dir, options: runOptions)
            #expect(fetched.items.first?.status == .unverified)
            #expect(fetched.items.first?.bytesDownloaded == Int64(body.count))
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(server.gets("/f").last?.headers["if-modified-since"] == nil)
            // Now recorded with the server's Last-Modified: asked with that, and kept.
            let kept = try await sync(yaml, in: dir, options: runOptions)
            #expect(kept.items.first?.status == .unchanged)
            #expect(server.gets("/f").last?.headers["if-modified-since"] == stamp)
            // The database lost (rebuilt empty): fetched again, not asked by mtime.
            try FileManager.default.removeItem(atPath: database(dir))
            let again = try await sync(yaml, in: dir, options: runOptions)
            #expect(again.items.first?.bytesDownloaded == Int64(body.count))
            #expect(server.gets("/f").last?.headers["if-modified-since"] == nil)
        }
    }

    @Test func refreshNeverAndAlwaysAndChecksummedItems() async throws {
        server.set("/n", TestServer.Route(body: body, etag: "\"n\""))
        server.set("/a", TestServer.Route(body: body, etag: "\"a\""))
        server.set("/c", TestServer.Route(body: body, etag: "\"c\""))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                items:
                  - {url: \(server.url("/n")), dest: n.bin, refresh: never}
                  - {url: \(server.url("/a")), dest: a.bin, refresh: always}
                  - {url: \(server.url("/c")), dest: c.bin, sha256: \(sha(body))}
                """
            _ = try await sync(yaml, in: dir, options: options())
            let report = try await sync(yaml, in: dir, options: options())
            #expect(report.items.map(\.status) == [.unverified, .unverified, .unchanged])
            #expect(server.gets("/n").count == 1)
            #expect(server.requests("/c").count == 1)
            #expect(server.gets("/a").count == 2)
            #expect(server.requests("/a").last?.headers["if-none-match"] == nil)
            #expect(server.responses("/a").last?.bodyBytes == body.count)
        }
    }

    @Test func badRefreshValueIsALocatedManifestError() throws {
        let yaml = "version: 1\nitems:\n  - url: https://example.org/a\n    refresh: sometimes\n"
        #expect {
            try Manifest.parse(yaml, name: "m.yaml")
        } throws: { error in
            (error as? ManifestError)?.errorDescription
                == "m.yaml:4:14: 'refresh' must be conditional, always or never, not 'sometimes'"
        }
        #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nitems:\n  - url: https://example.org/a\n    dest: .jgmirror/x\n", name: "m.yaml")
        }
    }

    // MARK: Damage

    @Test(arguments: ["garbage", "truncated", "page", "future", "blocked"])
    func damagedDatabaseIsRebuiltFromTheFiles(kind: String) async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options())
            let path = database(dir)
            switch kind {
            case "garbage", "blocked":
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                try Data(repeating: 0x5A, count: 64 << 10).write(to: URL(fileURLWithPath: path))
                if kind == "blocked" {
                    // The name the damaged file is kept under is taken by a folder.
                    write("x", to: "mirror/.jgmirror/state.sqlite.damaged/x", in: dir)
                }
            case "truncated":
                // Checkpoint the WAL first so the file holds the pages, then cut it.
                let queue = try DatabaseQueue(path: path)
                try Self.run("PRAGMA wal_checkpoint(TRUNCATE)", on: queue)
                try queue.close()
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                truncate(path, 1500)
            case "page":
                // A damaged page inside an intact file: the header and schema read
                // fine, only reading the table finds it.
                let queue = try DatabaseQueue(path: path)
                try Self.run("PRAGMA wal_checkpoint(TRUNCATE)", on: queue)
                let (page, pageSize) = try await queue.read { db in
                    (
                        try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'file'")!,
                        try Int.fetchOne(db, sql: "PRAGMA page_size")!
                    )
                }
                try queue.close()
                for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
                let fd = open(path, O_WRONLY)
                let junk = [UInt8](repeating: 0xFF, count: 64)
                pwrite(fd, junk, junk.count, off_t((page - 1) * pageSize))
                close(fd)
            default:
                let queue = try DatabaseQueue(path: path)
                try Self.run("INSERT INTO grdb_migrations (identifier) VALUES ('v999')", on: queue)
                try queue.close()
            }
            // The file is corrupted too: only hashing can tell.
            try flipFirstByteKeepingMtime(dir + "/mirror/out.bin")
            let log = HashLog()
            let report = try await sync(yaml, in: dir, options: options(log: log))
            #expect(report.warnings.count == 1)
            #expect(
                report.warnings.first?.contains(kind == "future" ? "newer jgmirror" : "damaged") == true, "\(report.warnings)")
            #expect(log.all == ["out.bin"])
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            if kind == "future" {
                #expect(StateStore.openExisting(root: dir + "/mirror") == nil)
            } else {
                #expect(try records(dir)["out.bin"]?.sha256 == sha(body))
                #expect(try await sync(yaml, in: dir, options: options()).warnings.isEmpty)
                if kind == "blocked" { #expect(report.warnings.first?.contains("moved to \(path).damaged-") == true) }
            }
        }
    }

    /// Another program holds the database: its write lock (the run opens it, and only
    /// its write fails), or the whole file (`locking_mode=EXCLUSIVE`: the run cannot even
    /// read it). Either way the run goes on without it and leaves it as it was.
    @Test(arguments: ["writer", "exclusive"])
    func lockedDatabaseCostsOnlyTheRecords(kind: String) async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            _ = try await sync(yaml, in: dir, options: options())
            unlink(dir + "/mirror/out.bin")
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true
            let queue = try DatabaseQueue(path: database(dir), configuration: configuration)
            if kind == "exclusive" {
                try Self.run("PRAGMA locking_mode = EXCLUSIVE", on: queue)
                try Self.run("BEGIN EXCLUSIVE", on: queue)
                try Self.run("COMMIT", on: queue)
            } else {
                try Self.run("BEGIN EXCLUSIVE", on: queue)
            }
            var fast = options()
            fast.stateBusyTimeout = 0.1
            let report = try await sync(yaml, in: dir, options: fast)
            #expect(report.items.first?.status == .downloaded)
            let expected = kind == "exclusive" ? "is locked by another program; not using it" : "cannot write state database"
            #expect(report.warnings.count == 1 && report.warnings.first?.contains(expected) == true, "\(report.warnings)")
            if kind == "writer" { try Self.run("ROLLBACK", on: queue) }
            try queue.close()
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            // Left alone: neither moved aside as damaged nor emptied.
            #expect(!exists(database(dir) + ".damaged"))
            #expect(try records(dir)["out.bin"]?.sha256 == sha(body))
        }
    }

    @Test func killBetweenPlacementAndRecordRehashesNextTime() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            _ = try await sync(manifest(url: server.url("/f"), sha256: sha(body)), in: dir, options: options())
            // A new version is placed, and the process dies before its record is written.
            let changed = TestServer.bytes(count: 20_000, seed: 134)
            server.set("/f", TestServer.Route(body: changed))
            let yaml = manifest(url: server.url("/f"), sha256: sha(changed))
            var dying = options()
            dying.beforeRecording = { false }
            #expect(try await sync(yaml, in: dir, options: dying).items.first?.status == .downloaded)
            #expect(try records(dir)["out.bin"]?.sha256 == sha(body))
            let log = HashLog()
            let report = try await sync(yaml, in: dir, options: options(log: log))
            #expect(report.items.first?.status == .unchanged)
            #expect(log.all == ["out.bin"])
            #expect(server.gets("/f").count == 2)
            #expect(try records(dir)["out.bin"]?.sha256 == sha(changed))
        }
    }

    /// A real crash: the built binary kills itself with SIGKILL after placing a file
    /// and before recording it (the CLI's fault injection, `SyncCommand.crashBeforeRecording`).
    /// Each next run finds the database intact, hashes what its records no longer
    /// describe, and ends correct; a later no-op run sends no request for checksummed
    /// items. Twice the crash leaves a record that names exactly what the next
    /// manifest expects (a rollback), which only the stat and the racy rule expose.
    @Test func sigkillBetweenPlacementAndRecordLeavesACorrectMirror() async throws {
        let a1 = TestServer.bytes(count: 20_000, seed: 141)
        let a2 = TestServer.bytes(count: 20_000, seed: 142)
        let d1 = TestServer.bytes(count: 5_000, seed: 143)
        let d2 = TestServer.bytes(count: 5_000, seed: 144)
        server.set("/a1", TestServer.Route(body: a1))
        server.set("/a2", TestServer.Route(body: a2))
        server.set("/b", TestServer.Route(body: body))
        // Content-hash ETags (the same bytes, the same ETag) and a Last-Modified.
        server.set("/d", TestServer.Route(body: d1, etag: "\"d1\"", lastModified: "Thu, 01 Jan 2015 00:00:00 GMT"))
        try await withTestDirectory { dir in
            func manifest(_ path: String, _ bytes: [UInt8]) -> String {
                """
                version: 1
                items:
                  - {url: \(server.url(path)), dest: a.bin, sha256: \(sha(bytes))}
                  - {url: \(server.url("/b")), dest: b.bin, sha256: \(sha(body))}
                  - {url: \(server.url("/d")), dest: d.bin}
                """
            }
            let first = write(manifest("/a1", a1), to: "m1.yaml", in: dir)
            let second = write(manifest("/a2", a2), to: "m2.yaml", in: dir)
            let root = dir + "/mirror"
            let environment = ["JGMIRROR_TEST_CRASH_BEFORE_RECORDING": "1"]
            /// A run that must end well: exit 0, no warning, nothing failed, every
            /// record true to its file. Returns each item's status.
            func sync(_ manifest: String) async throws -> [String: ItemStatus] {
                unlink(dir + "/r.json")
                let run = try await execute(["sync", manifest, "--root", root, "--progress", "none", "--report", dir + "/r.json"])
                #expect(run.status == 0, "\(run.stderr)")
                let report = try RunReport.decode(Data(contentsOf: URL(fileURLWithPath: dir + "/r.json")))
                #expect(report.warnings.isEmpty, "\(report.warnings)")
                let records = try self.records(dir)
                for name in ["a.bin", "b.bin", "d.bin"] {
                    // A file without a checksum checked by its mtime alone has no hash on record.
                    let hash = records[name]?.sha256 ?? (name == "d.bin" ? fileSHA(root + "/" + name) : nil)
                    #expect(hash == fileSHA(root + "/" + name), "\(name)")
                    #expect(records[name]?.stat == FileStat.of(path: root + "/" + name), "\(name)")
                    #expect(!exists(root + "/" + name + ".jgpart") && !exists(root + "/" + name + ".jgd"))
                }
                return Dictionary(uniqueKeysWithValues: report.items.map { ($0.dest, $0.status) })
            }
            /// A run that dies by SIGKILL after placing one file, before recording it.
            func crash(_ manifest: String, placing name: String, as bytes: [UInt8]) async throws {
                let before = try records(dir)[name]
                let run = try await execute(["sync", manifest, "--root", root, "--progress", "none"], environment: environment)
                #expect(run.status == SIGKILL, "\(run.stderr)")
                #expect(fileSHA(root + "/" + name) == sha(bytes))
                // The database opens without complaint and still holds the old record.
                let opening = StateStore.open(folder: root + "/.jgmirror")
                #expect(opening.warning == nil, "\(opening.warning ?? "")")
                #expect(try opening.store?.records()[name] == before)
                opening.store?.close()
            }

            #expect(try await sync(first) == ["a.bin": .downloaded, "b.bin": .downloaded, "d.bin": .unverified])
            // A new version of a.bin is placed; the process dies before recording it.
            try await crash(second, placing: "a.bin", as: a2)
            #expect(try await sync(second) == ["a.bin": .unchanged, "b.bin": .unchanged, "d.bin": .unchanged])
            #expect(server.gets("/a2").count == 1 && server.gets("/b").count == 1)
            #expect(try await sync(second) == ["a.bin": .unchanged, "b.bin": .unchanged, "d.bin": .unchanged])
            #expect(server.gets("/a2").count == 1 && server.gets("/b").count == 1)

            // Rollback: a1 is placed and not recorded, so the record (a2) names exactly
            // what the next manifest expects, for a file that now holds a1.
            try await crash(first, placing: "a.bin", as: a1)
            #expect(try await sync(second)["a.bin"] == .downloaded)
            #expect(fileSHA(root + "/a.bin") == sha(a2))

            // The same for an item without a checksum: d2 is placed under the record of
            // d1's ETag, then the remote goes back to d1's bytes (so to its ETag), with a
            // newer Last-Modified. Asking with that ETag would keep d2.
            server.set("/d", TestServer.Route(body: d2, etag: "\"d2\"", lastModified: "Fri, 01 Jan 2100 00:00:00 GMT"))
            try await crash(second, placing: "d.bin", as: d2)
            server.set("/d", TestServer.Route(body: d1, etag: "\"d1\"", lastModified: "Sat, 01 Jan 2101 00:00:00 GMT"))
            #expect(try await sync(second)["d.bin"] == .unverified)
            #expect(fileSHA(root + "/d.bin") == sha(d1))
            #expect(server.requests("/d").last?.headers["if-none-match"] == nil)

            // And a no-op run after all that: no request for the checksummed items.
            let requests = (server.requests("/a1").count, server.requests("/a2").count, server.requests("/b").count)
            let last = try await sync(second)
            #expect(last["a.bin"] == .unchanged && last["b.bin"] == .unchanged)
            #expect((server.requests("/a1").count, server.requests("/a2").count, server.requests("/b").count) == requests)
        }
    }

    // MARK: Prune

    /// A mirror with one item and strays around it, symlinks and a live part file.
    func strayMirror(_ dir: String) throws -> String {
        server.set("/f", TestServer.Route(body: body))
        server.set("/g", TestServer.Route(body: body))
        let root = dir + "/mirror"
        for name in ["old/x.bin", "old/deep/y.bin", "stray.txt", "keep/out.bin.jgpart", "dead.bin.jgpart"] {
            write("stray", to: "mirror/" + name, in: dir)
        }
        try FileManager.default.createDirectory(atPath: root + "/empty/inner", withIntermediateDirectories: true)
        write("outside", to: "outside/secret.txt", in: dir)
        try FileManager.default.createSymbolicLink(atPath: root + "/link.txt", withDestinationPath: dir + "/outside/secret.txt")
        try FileManager.default.createSymbolicLink(atPath: root + "/linkdir", withDestinationPath: dir + "/outside")
        return """
            version: 1
            items:
              - {url: \(server.url("/f")), dest: a.bin, sha256: \(sha(body))}
              - {url: \(server.url("/g")), dest: keep/out.bin, sha256: \(sha(body))}
            """
    }

    @Test func deleteRemovesWhatNoItemProducesAndLeavesSymlinksAlone() async throws {
        try await withTestDirectory { dir in
            let yaml = try strayMirror(dir)
            var pruning = options()
            pruning.delete = true
            pruning.deleteLimits.share = 1  // 4 strays beside 2 items
            let report = try await sync(yaml, in: dir, options: pruning)
            let deleted = report.items.filter { $0.status == .deleted }.map(\.dest).sorted()
            #expect(deleted == ["dead.bin.jgpart", "old/deep/y.bin", "old/x.bin", "stray.txt"])
            #expect(report.totals.deleted == 4 && report.exitCode == .success)
            let root = dir + "/mirror"
            #expect(!exists(root + "/old") && !exists(root + "/empty"))
            #expect(exists(root + "/a.bin") && exists(root + "/keep/out.bin") && exists(root + "/.jgmirror/state.sqlite"))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/link.txt")) != nil)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/linkdir")) != nil)
            #expect(exists(dir + "/outside/secret.txt"))
            let json = String(decoding: try report.jsonData(), as: UTF8.self)
            #expect(json.contains("\"deleted\": 4") && json.contains("\"status\": \"deleted\""))
        }
    }

    @Test func livePartFileIsKept() throws {
        try withTestDirectorySync { dir in
            write("part", to: "mirror/a.bin.jgpart", in: dir)
            write("state", to: "mirror/a.bin.jgd", in: dir)
            write("other", to: "mirror/b.bin.jgpart", in: dir)
            let plan = Plan(
                manifest: try Manifest.parse(
                    "version: 1\nroot: mirror\nitems:\n  - {url: https://e.org/a.bin}\n", name: dir + "/m.yaml"))
            #expect(Prune.plan(root: dir + "/mirror", items: plan.items).files.map(\.path) == ["b.bin.jgpart"])
        }
    }

    /// A name that is not UTF-8 cannot be any item's, nor be named back to the kernel
    /// through a `String`: it is left, with its folder, not reported deleted.
    @Test func aNameThatIsNotUTF8IsLeftAlone() throws {
        try withTestDirectorySync { dir in
            write("x", to: "mirror/sub/keep.txt", in: dir)
            let raw: [UInt8] = Array((dir + "/mirror/sub/x").utf8) + [0xFF] + Array(".bin".utf8) + [0]
            let fd = raw.withUnsafeBufferPointer {
                open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644)
            }
            #expect(fd >= 0)
            close(fd)
            let plan = Plan(
                manifest: try Manifest.parse(
                    "version: 1\nroot: mirror\nitems:\n  - {url: https://e.org/a.bin}\n", name: dir + "/m.yaml"))
            let prune = Prune.plan(root: dir + "/mirror", items: plan.items)
            #expect(prune.files.map(\.path) == ["sub/keep.txt"] && prune.folders.isEmpty)
            #expect(prune.execute(root: dir + "/mirror").map(\.dest) == ["sub/keep.txt"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/mirror/sub").count == 1)
        }
    }

    @Test func maxDeleteRefusesBeforeDeletingOrFetching() async throws {
        try await withTestDirectory { dir in
            let yaml = try strayMirror(dir)
            for limit in [3, 0] {
                var pruning = options()
                pruning.delete = true
                pruning.deleteLimits.count = limit
                do {
                    _ = try await sync(yaml, in: dir, options: pruning)
                    Issue.record("expected a refusal")
                } catch {
                    #expect((error as? SyncError)?.exitCode == .local)
                    #expect((error as? SyncError)?.itemError.code == .maxDelete)
                }
            }
            #expect(exists(dir + "/mirror/old/x.bin") && exists(dir + "/mirror/stray.txt"))
            #expect(server.requests().isEmpty)
        }
    }

    @Test func deleteUnderAFilterIsRefusedByTheLibraryToo() async throws {
        try await withTestDirectory { dir in
            let yaml = try strayMirror(dir)
            let manifest = try Manifest.parse(yaml, name: dir + "/m.yaml")
            var planOptions = PlanOptions()
            planOptions.root = dir + "/mirror"
            planOptions.shard = try Shard(index: 0, count: 2)
            var pruning = options()
            pruning.delete = true
            let session = SyncSession(plan: Plan(manifest: manifest, options: planOptions), options: pruning)
            await #expect {
                try await session.run()
            } throws: { error in
                (error as? SyncError)?.exitCode == .usage
            }
            #expect(exists(dir + "/mirror/stray.txt") && exists(dir + "/mirror/old/x.bin"))
            #expect(server.requests().isEmpty)
        }
    }

    @Test func deleteUnderAFilterIsAUsageError() async throws {
        try await withTestDirectory { dir in
            let yaml = try strayMirror(dir)
            let path = write(yaml, to: "m.yaml", in: dir)
            for filter in [["--shard", "0/2"], ["--tag", "x"], ["--skip-tag", "x"]] {
                let run = try await execute(["sync", path, "--root", dir + "/mirror", "--delete"] + filter)
                #expect(run.status == 2, "\(filter): \(run.stderr)")
            }
            #expect(exists(dir + "/mirror/stray.txt"))
            #expect(server.requests().isEmpty)
            // A name on disk may hold a newline: it stays one row, escaped.
            write("x", to: "mirror/new\nline.txt", in: dir)
            let plan = try await execute(["plan", path, "--root", dir + "/mirror", "--delete"])
            // More than half the tree: `sync --delete` would refuse, and plan says so (exit 4).
            #expect(plan.status == 4 && plan.stderr.contains("sync --delete would refuse"), "\(plan.stderr)")
            let rows = plan.stdout.split(separator: "\n").filter { $0.hasPrefix("delete ") }
            #expect(rows.count == 5 && rows.contains { $0.contains("old/deep/y.bin") }, "\(plan.stdout)")
            #expect(rows.contains { $0.contains("new\\x0aline.txt") } && !plan.stdout.contains("new\n"), "\(plan.stdout)")
            #expect(!plan.stdout.contains(".jgmirror"))
        }
    }

    // MARK: Locks

    @Test func nestedRootsAreRefusedBothWays() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/f"), sha256: sha(body))
            try FileManager.default.createDirectory(atPath: dir + "/mirror/sub", withIntermediateDirectories: true)
            // A run holds a folder inside this root.
            var inner: StateFolder? = try StateFolder(root: dir + "/mirror/sub", shard: nil)
            await #expect(throws: SyncError.self) { try await sync(yaml, in: dir, options: options()) }
            inner = nil
            // A run holds this root; a run below it is refused.
            do {
                let outer = try StateFolder(root: dir + "/mirror", shard: nil)
                #expect(throws: SyncError.self) { try StateFolder(root: dir + "/mirror/sub", shard: nil) }
                #expect(throws: SyncError.self) { try StateFolder(root: dir + "/mirror/sub/deeper", shard: nil) }
                withExtendedLifetime(outer) {}
            }
            withExtendedLifetime(inner) {}
            #expect(server.requests().isEmpty)
            // Nothing held: both run.
            #expect(try await sync(yaml, in: dir, options: options()).exitCode == .success)
            #expect((try? StateFolder(root: dir + "/mirror/sub", shard: nil)) != nil)
        }
    }

    @Test func lockedTreeWritesAReportWithNoItemsAndCodeLocked() async throws {
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let path = write(manifest(url: server.url("/f"), sha256: sha(body)), to: "m.yaml", in: dir)
            let outer = try StateFolder(root: dir, shard: nil)
            let run = try await execute(["sync", path, "--root", dir + "/mirror", "--report", dir + "/r.json"])
            withExtendedLifetime(outer) {}
            #expect(run.status == 4)
            #expect(run.stderr.contains("another jgmirror sync holds \(dir), which contains"), "\(run.stderr)")
            let report = try loadReport(dir + "/r.json")
            #expect((report["error"] as? [String: Any])?["code"] as? String == "locked")
            #expect((report["items"] as? [Any])?.isEmpty == true)
            #expect(server.requests().isEmpty)
        }
    }

    @Test func shardsOfOneCountShareATreeAndNothingElseDoes() throws {
        try withTestDirectorySync { dir in
            let root = dir + "/mirror"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            let first = try StateFolder(root: root, shard: Shard(index: 0, count: 2))
            let second = try StateFolder(root: root, shard: Shard(index: 1, count: 2))
            #expect(throws: SyncError.self) { try StateFolder(root: root, shard: Shard(index: 0, count: 2)) }
            #expect(throws: SyncError.self) { try StateFolder(root: root, shard: nil) }
            #expect(throws: SyncError.self) { try StateFolder(root: root, shard: Shard(index: 2, count: 3)) }
            withExtendedLifetime((first, second)) {}
        }
    }

    @Test func concurrentShardsFillOneTreeAndOneDatabase() async throws {
        let yaml = servedManifest(prefix: "/s")
        try await withTestDirectory { dir in
            let manifest = try Manifest.parse(yaml, name: dir + "/m.yaml")
            let reports = try await withThrowingTaskGroup(of: RunReport.self) { group in
                for index in 0..<2 {
                    var planOptions = PlanOptions()
                    planOptions.root = dir + "/mirror"
                    planOptions.shard = try Shard(index: index, count: 2)
                    let plan = Plan(manifest: manifest, options: planOptions)
                    let options = self.options()
                    group.addTask { try await SyncSession(plan: plan, options: options).run() }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.flatMap(\.items).count == 12)
            #expect(reports.allSatisfy { $0.exitCode == .success && $0.warnings.isEmpty }, "\(reports.map(\.warnings))")
            #expect(try records(dir).count == 12)
        }
    }

    @Test func twoProcessesNeverWriteOnePartFile() throws {
        try withTestDirectorySync { dir in
            let path = dir + "/a.bin.jgpart"
            let root = try RootDirectory(path: dir)
            do {
                let first = try PartFile(path: path, fresh: true, root: root)
                #expect { try PartFile(path: path, fresh: true, root: root) } throws: { ($0 as? TransferError)?.code == .locked }
                #expect { try PartFile(path: path, fresh: false, root: root) } throws: { ($0 as? TransferError)?.code == .locked }
                withExtendedLifetime(first) {}
            }
            #expect((try? PartFile(path: path, fresh: false, root: root)) != nil)
        }
    }

    @Test func aPartFileAnotherProcessHoldsIsLeftToIt() async throws {
        // Another process writes out.bin.jgpart (its lock held here on a descriptor of
        // our own): this run fails the item as locked and leaves that file alone.
        server.set("/f", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/mirror", withIntermediateDirectories: true)
            let root = try RootDirectory(path: dir + "/mirror")
            let other = try PartFile(path: dir + "/mirror/out.bin.jgpart", fresh: true, root: root)
            let report = try await sync(manifest(url: server.url("/f"), sha256: sha(body)), in: dir, options: options())
            #expect(report.items.first?.error?.code == .locked)
            #expect(exists(dir + "/mirror/out.bin.jgpart"))
            withExtendedLifetime(other) {}
        }
    }

    // MARK: Helpers

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
