import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

extension StateTests {
    /// What a placed file's record holds and when it vouches for the file without a read
    /// (docs/state.md#the-quick-check); a record taken too close to the file's last change
    /// is not trusted until a later look settles it (docs/state.md#racy-validators).
    @Suite struct QuickCheckTests: StateSuite {
        let server: TestServer
        let body = TestServer.bytes(count: 20_000, seed: 131)

        init() throws { server = try TestServer() }

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
    }
}
