import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A small fresh file's body is held in memory instead of written to its part file,
/// and written once, verified, by placement (`TransferRequest.memoryLimit`,
/// `HeldBody`, `Placement.Commit.contents`).
@Suite struct HeldBodyTests {
    private func put(_ bytes: [UInt8], at offset: Int64, into body: HeldBody) -> Bool {
        bytes.withUnsafeBytes { body.write($0, at: offset) }
    }

    @Test func bytesLandAtTheirOffsetsAndNeverPastTheLength() {
        let body = HeldBody(length: 10)
        #expect(put([1, 2, 3], at: 0, into: body))
        #expect(put([4, 5], at: 3, into: body))
        // A region further on arrives first: the gap is zero until its bytes come.
        #expect(put([9, 10], at: 8, into: body))
        #expect(body.bytes == [1, 2, 3, 4, 5, 0, 0, 0, 9, 10])
        #expect(put([6, 7, 8], at: 5, into: body))
        #expect(body.bytes == Array(1...10))
        #expect(!put([11], at: 10, into: body))
        #expect(!put([0, 0], at: 9, into: body))
        #expect(!put([0], at: -1, into: body))
        #expect(body.bytes == Array(1...10))
    }

    private func request(_ dir: String, url: String, limit: Int64?) throws -> TransferRequest {
        var request = TransferRequest(
            id: 0, sources: [url], root: try RootDirectory(path: dir), partPath: dir + "/f.jgpart", statePath: dir + "/f.jgd",
            expectedSize: nil, connections: 4, retries: 2, minSegment: 1 << 20, timeout: 5, headers: [], insecure: false,
            resume: true)
        request.knownFresh = true
        request.memoryLimit = limit
        return request
    }

    /// Runs `request` through an engine; `atCompletion` runs on the engine thread as
    /// the item completes, before anyone could place its file.
    private func fetch(_ request: TransferRequest, atCompletion: @escaping @Sendable () -> Void) async throws -> TransferOutcome {
        let engine = try TransferEngine(configuration: testOptions().engineConfiguration) { _ in }
        defer { engine.shutdown() }
        return await withCheckedContinuation { done in
            engine.submit(request) { outcome in
                atCompletion()
                done.resume(returning: outcome)
            }
        }
    }

    @Test func aSmallFreshFileIsHandedOverInMemoryWithNoPartFile() async throws {
        let server = try TestServer()
        let small = TestServer.bytes(count: 20_000, seed: 3)
        server.set("/s", TestServer.Route(body: small))
        try await withTestDirectory { dir in
            let partSeen = Locked<Bool?>(nil)
            let outcome = try await fetch(try request(dir, url: server.url("/s"), limit: 64 << 10)) {
                partSeen.withLock { $0 = exists(dir + "/f.jgpart") }
            }
            guard case .completed = outcome.status else {
                Issue.record("expected a completed item, got \(outcome.status)")
                return
            }
            #expect(outcome.body.map(sha) == sha(small), "the outcome must hand over the whole body")
            #expect(partSeen.value == false, "a held body must not make a part file")
        }
    }

    @Test(arguments: [nil, Int64(16 << 10)])
    func aLargerFileOrOneWithoutALimitGoesToItsPartFile(limit: Int64?) async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 40_000, seed: 4)
        server.set("/l", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            let onDisk = Locked<[UInt8]?>(nil)
            let outcome = try await fetch(try request(dir, url: server.url("/l"), limit: limit)) {
                onDisk.withLock { $0 = FileManager.default.contents(atPath: dir + "/f.jgpart").map { [UInt8]($0) } }
            }
            guard case .completed = outcome.status else {
                Issue.record("expected a completed item, got \(outcome.status)")
                return
            }
            #expect(outcome.body == nil)
            #expect(onDisk.value.map(sha) == sha(body), "the part file must hold the whole body")
        }
    }

    @Test func theFirstResponseDecidesWhetherAPartFileIsMade() async throws {
        try await withTestDirectory { dir in
            var configuration = TransferEngine.Configuration()
            configuration.durable = false
            // This thread plays the engine thread, which the storage's fields belong to.
            let thread = EngineThread()
            thread.enter()
            let held = ItemStorage(
                request: try request(dir, url: "http://127.0.0.1:1/f", limit: 64 << 10), configuration: configuration,
                thread: thread)
            #expect(held.learned(length: 4096, rangesSupported: true) == nil)
            #expect(!exists(dir + "/f.jgpart"))
            // Larger than the limit, or of unknown length: the part file is made now.
            for length in [Int64(1 << 20), nil] {
                let storage = ItemStorage(
                    request: try request(dir, url: "http://127.0.0.1:1/f", limit: 64 << 10), configuration: configuration,
                    thread: thread)
                #expect(storage.learned(length: length, rangesSupported: false) == nil)
                #expect(exists(dir + "/f.jgpart"), "\(String(describing: length))")
                storage.close(keepingState: false, book: nil, validators: Validators())?.sync {}  // waits for its queue
                #expect(!exists(dir + "/f.jgpart"))
            }
        }
    }

    @Test(arguments: [false, true])
    func placementWritesAHeldBodyThenRenamesIt(durable: Bool) async throws {
        try await withTestDirectory { dir in
            let root = try RootDirectory(path: dir)
            let placement = Placement(durable: durable, root: root, pool: WorkPool(computingThreads: 1))
            let contents = TestServer.bytes(count: 5000, seed: 9)
            let failure = await withCheckedContinuation { done in
                placement.commit(
                    Placement.Commit(part: dir + "/a.bin.jgpart", destination: dir + "/a.bin", contents: contents) {
                        done.resume(returning: $0)
                    })
            }
            #expect(failure == nil)
            #expect(FileManager.default.contents(atPath: dir + "/a.bin") == Data(contents), "the placed file must hold the body")
            #expect(!exists(dir + "/a.bin.jgpart"))
        }
    }

    /// Without syncs, a held body is linked in whole from an unnamed file: its part
    /// file's name is never used (a folder squats on it here), and a destination
    /// already there is replaced through the part file as before.
    @Test func withoutSyncsAHeldBodyIsLinkedInWithoutAPartFile() async throws {
        try await withTestDirectory { dir in
            let root = try RootDirectory(path: dir)
            let placement = Placement(durable: false, root: root, pool: WorkPool(computingThreads: 1))
            func place(_ name: String, _ contents: [UInt8]) async -> TransferError? {
                await withCheckedContinuation { done in
                    placement.commit(
                        Placement.Commit(part: dir + "/\(name).jgpart", destination: dir + "/\(name)", contents: contents) {
                            done.resume(returning: $0)
                        })
                }
            }
            try FileManager.default.createDirectory(atPath: dir + "/new.bin.jgpart", withIntermediateDirectories: false)
            #expect(await place("new.bin", [1, 2, 3]) == nil)
            #expect(FileManager.default.contents(atPath: dir + "/new.bin") == Data([1, 2, 3]))
            write("old", to: "old.bin", in: dir)
            #expect(await place("old.bin", [4, 5]) == nil)
            #expect(FileManager.default.contents(atPath: dir + "/old.bin") == Data([4, 5]))
            #expect(!exists(dir + "/old.bin.jgpart"))
            // With syncs the part file is written, synced and renamed: here it cannot be.
            let durable = Placement(durable: true, root: root, pool: WorkPool(computingThreads: 1))
            let refused = await withCheckedContinuation { done in
                durable.commit(
                    Placement.Commit(part: dir + "/new.bin.jgpart", destination: dir + "/other.bin", contents: [6]) {
                        done.resume(returning: $0)
                    })
            }
            #expect(refused != nil && !exists(dir + "/other.bin"))
        }
    }

    @Test func anUnnamedFileIsLinkedOnlyWhereNothingIsYet() throws {
        try withTestDirectorySync { dir in
            let root = try RootDirectory(path: dir)
            let first = try [UInt8]([7, 8, 9]).withUnsafeBytes { try root.linkNewFile($0, at: dir + "/a") }
            #expect(first.map { Int($0.st_size) } == 3 && first.map { $0.st_nlink } == 1)
            #expect(FileManager.default.contents(atPath: dir + "/a") == Data([7, 8, 9]))
            let second = try [UInt8]([1]).withUnsafeBytes { try root.linkNewFile($0, at: dir + "/a") }
            #expect(second == nil)
            #expect(FileManager.default.contents(atPath: dir + "/a") == Data([7, 8, 9]))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["a"])
            // A folder on the way that is a symlink is refused, as for every write below the root.
            try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "/tmp")
            #expect(throws: TransferError.self) {
                try [UInt8]([1]).withUnsafeBytes { try root.linkNewFile($0, at: dir + "/link/x") }
            }
        }
    }

    /// A part file without resume state, left by a run killed during a small file, is
    /// removed, not kept beside the file a held body became (it would never go:
    /// `--delete` keeps an item's part file), with syncs or without.
    @Test(arguments: [false, true])
    func aPartFileLeftWithoutStateIsRemoved(durable: Bool) async throws {
        let server = try TestServer()
        let body = TestServer.bytes(count: 3000, seed: 11)
        server.set("/s", TestServer.Route(body: body))
        try await withTestDirectory { dir in
            write("left by a killed run", to: "mirror/out.bin.jgpart", in: dir)
            var options = testOptions()
            options.durable = durable
            let report = try await sync(manifest(url: server.url("/s"), sha256: sha(body)), in: dir, options: options)
            #expect(report.items.first?.status == .downloaded)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            #expect(!exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    /// Bytes that fail their checksum are kept as `DEST.jgbad`, written through a new
    /// part file: one another process holds is left to it, and the report says the
    /// bytes were not kept.
    @Test func rejectedBytesAreKeptAsideButNeverThroughAPartFileAnotherProcessHolds() async throws {
        try await withTestDirectory { dir in
            let root = try RootDirectory(path: dir)
            let kept = Placement.quarantine(
                part: dir + "/a.bin.jgpart", destination: dir + "/a.bin", state: dir + "/a.bin.jgd", root: root, contents: [1, 2])
            #expect(kept == "bytes kept in \(dir)/a.bin.jgbad")
            #expect(FileManager.default.contents(atPath: dir + "/a.bin.jgbad") == Data([1, 2]) && !exists(dir + "/a.bin.jgpart"))
            let theirs = try PartFile(path: dir + "/b.bin.jgpart", fresh: true, root: root)
            try [UInt8]("theirs".utf8).withUnsafeBytes { try theirs.write($0, at: 0) }
            let refused = Placement.quarantine(
                part: dir + "/b.bin.jgpart", destination: dir + "/b.bin", state: dir + "/b.bin.jgd", root: root, contents: [3])
            #expect(refused.hasPrefix("bytes not kept ("), "\(refused)")
            #expect(
                FileManager.default.contents(atPath: dir + "/b.bin.jgpart") == Data("theirs".utf8)
                    && !exists(dir + "/b.bin.jgbad"))
            withExtendedLifetime(theirs) {}
        }
    }

    /// A run that stops before it needed the state database closes it once it is
    /// open, without waiting for it.
    @Test func aDatabaseStillOpeningIsClosedOnceOpen() async throws {
        await withTestDirectory { dir in
            let release = DispatchSemaphore(value: 0)
            let pool = WorkPool(computingThreads: 1)
            let opening = StateOpening(on: pool) {
                release.wait()
                let store = StateStore.open(folder: dir).store
                return StateOpening.Opened(store: store, records: RecordTable(), warnings: [])
            }
            opening.close()
            release.signal()
            let store = await pool.run { opening.store }
            #expect(store != nil)
            #expect(throws: (any Error).self) { try store?.records() }
        }
    }

    /// Another process writing the part file's name (a `get` into the tree) keeps it:
    /// a held body to be synced (through the part file) is not written through its
    /// lock, and nothing is placed.
    @Test func aPartFileAnotherProcessHoldsIsNotTaken() async throws {
        try await withTestDirectory { dir in
            let root = try RootDirectory(path: dir)
            let theirs = try PartFile(path: dir + "/a.bin.jgpart", fresh: true, root: root)
            try [UInt8]("theirs".utf8).withUnsafeBytes { try theirs.write($0, at: 0) }
            let placement = Placement(durable: true, root: root, pool: WorkPool(computingThreads: 1))
            let failure = await withCheckedContinuation { done in
                placement.commit(
                    Placement.Commit(part: dir + "/a.bin.jgpart", destination: dir + "/a.bin", contents: [1, 2, 3]) {
                        done.resume(returning: $0)
                    })
            }
            #expect(failure?.code == .locked)
            #expect(!exists(dir + "/a.bin"))
            #expect(FileManager.default.contents(atPath: dir + "/a.bin.jgpart") == Data("theirs".utf8))
            withExtendedLifetime(theirs) {}
        }
    }
}
