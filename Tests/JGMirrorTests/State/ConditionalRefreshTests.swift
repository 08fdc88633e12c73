import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

extension StateTests {
    /// Conditional refresh (docs/sync.md#unchanged-files): a recorded file is asked for with
    /// its validators and a `304` costs no body; a file changed here, found in place or without
    /// a record is fetched again, never asked for by its own mtime.
    @Suite struct ConditionalRefreshTests: StateSuite {
        let server: TestServer
        let body = TestServer.bytes(count: 20_000, seed: 131)

        init() throws { server = try TestServer() }

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
    }
}
