import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

extension StateTests {
    /// A damaged or locked state database, or a run killed between placing a file and
    /// recording it, costs only records (docs/state.md#the-state-folder): the run goes on, and
    /// the next one hashes what its records no longer describe and ends correct.
    @Suite struct StateRecoveryTests: StateSuite {
        let server: TestServer
        let body = TestServer.bytes(count: 20_000, seed: 131)

        init() throws { server = try TestServer() }

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
                    report.warnings.first?.contains(kind == "future" ? "newer jgmirror" : "damaged") == true, "\(report.warnings)"
                )
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
                    let run = try await execute([
                        "sync", manifest, "--root", root, "--progress", "none", "--report", dir + "/r.json",
                    ])
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
                    let run = try await execute(
                        ["sync", manifest, "--root", root, "--progress", "none"], environment: environment)
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
    }
}
