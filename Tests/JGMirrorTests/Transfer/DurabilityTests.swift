import Foundation
import TestServer
import Testing

@testable import JGMirror

/// A download's bytes reach the disk while they arrive, and a failed sync fails the item
/// with no state claiming its bytes (docs/sync.md#fetching-and-placing); the engine's
/// sync and writeback calls are counted or failed through the options.
@Suite struct DurabilityTests: OriginSuite {
    let server: TestServer
    let body = TestServer.bytes(count: 3 << 20, seed: 42)

    init() throws { server = try TestServer() }

    /// Fetches the 3 MiB body on one connection at 4 MiB/s, durably and then under
    /// `--no-fsync`, with no checkpoints; `hook` installs a counter in the options.
    /// Returns what the counter reached in each run, and the options for more runs.
    private func countDuringDownloads(
        in dir: String, _ hook: (inout SyncOptions, Locked<Int>) -> Void
    ) async throws -> (durable: Int, notDurable: Int, options: SyncOptions, count: Locked<Int>) {
        serve { $0.bytesPerSecond = 4 << 20 }
        let count = Locked(0)
        var options = testOptions()
        options.checkpointInterval = 3600  // no checkpoint syncs
        hook(&options, count)
        let yaml = manifest(url: server.url("/f"), sha256: sha(body), extra: "connections: 1")
        let report = try await sync(yaml, in: dir, options: options)
        #expect(report.items.first?.status == .downloaded)
        #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
        let durable = count.withLock { value in
            defer { value = 0 }
            return value
        }

        options.durable = false
        try FileManager.default.removeItem(atPath: dir + "/mirror/out.bin")
        let unsynced = try await sync(yaml, in: dir, options: options)
        #expect(unsynced.items.first?.status == .downloaded)
        options.durable = true
        return (
            durable,
            count.withLock { value in
                defer { value = 0 }
                return value
            }, options, count
        )
    }

    /// Fetches 64 KiB (under every writeback and flush step) durably into `dir`.
    private func downloadSmallFile(in dir: String, options: SyncOptions) async throws {
        let small = [UInt8](repeating: 7, count: 64 << 10)
        server.set("/small", TestServer.Route(body: small))
        let report = try await sync(manifest(url: server.url("/small"), sha256: sha(small)), in: dir, options: options)
        #expect(report.items.first?.status == .downloaded)
    }

    @Test func durableDataIsSyncedWhileItArrives() async throws {
        try await withTestDirectory { dir in
            let calls = try await countDuringDownloads(in: dir) { options, syncs in
                options.engine.flushStep = 256 << 10
                options.engine.dataSync = { fd in
                    syncs.withLock { $0 += 1 }
                    return fdatasync(fd)
                }
            }
            // 3 MiB over about 0.75 s in steps of 256 KiB, one flush at a time (and the
            // sync after the last byte, which placement then does not repeat).
            #expect(calls.durable >= 2)
            #expect(calls.notDurable == 0)
        }
    }

    @Test func durableDataStartsWritebackWhileItArrives() async throws {
        try await withTestDirectory { dir in
            let calls = try await countDuringDownloads(in: dir) { options, starts in
                options.engine.writebackStep = 512 << 10
                options.engine.startWriteback = { _ in
                    starts.withLock { $0 += 1 }
                    return 0
                }
            }
            // 3 MiB over about 0.75 s in steps of 512 KiB, at most one start queued at a
            // time: the first is queued at 512 KiB, and a loaded machine that runs it
            // late merges the later steps into it.
            #expect(calls.durable >= 1)
            #expect(calls.notDurable == 0)

            // A small file is left to placement's batch sync.
            try await downloadSmallFile(in: dir, options: calls.options)
            #expect(calls.count.withLock { $0 } == 0)
        }
    }

    @Test func aLargeFileIsSyncedAsItsLastByteArrivesAndNotAgainWhenPlaced() async throws {
        // The engine's part file is open for writing, placement's sync opens it to read.
        let placementSyncs = Locked(0)
        try await withTestDirectory { dir in
            let calls = try await countDuringDownloads(in: dir) { options, engineSyncs in
                options.engine.writebackStep = 512 << 10
                options.engine.dataSync = { fd in
                    let reading = fcntl(fd, F_GETFL) & O_ACCMODE == O_RDONLY
                    (reading ? placementSyncs : engineSyncs).withLock { $0 += 1 }
                    return fdatasync(fd)
                }
            }
            #expect(calls.durable == 1 && calls.notDurable == 0)
            #expect(placementSyncs.value == 0)

            // A small file started no writeback: placement syncs it.
            try await downloadSmallFile(in: dir, options: calls.options)
            #expect(calls.count.value == 0 && placementSyncs.value == 1)
        }
    }

    @Test func aLargeFileWhoseLastSyncFailsIsNotPlaced() async throws {
        // No checkpoints, no flushes: the one sync is the engine's after the last byte.
        serve { $0.bytesPerSecond = 8 << 20 }
        try await withTestDirectory { dir in
            var options = testOptions()
            options.checkpointInterval = 3600
            options.engine.writebackStep = 512 << 10
            options.engine.dataSync = { _ in
                errno = EIO
                return -1
            }
            let yaml = manifest(url: server.url("/f"), sha256: sha(body), extra: "connections: 1")
            let report = try await sync(yaml, in: dir, options: options)
            let item = try #require(report.items.first)
            #expect(item.status == .failed && item.error?.code == .ioError)
            #expect(item.error?.message.contains("cannot sync") == true)
            #expect(report.exitCode == .local)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgpart"))
        }
    }

    /// Flushes on one connection (caught at the next flush); checkpoints only on four
    /// (caught when the item completes).
    @Test(arguments: zip([1, 4], [Int64(256 << 10), Int64.max]))
    func aFailedSyncFailsTheItemAndNoStateClaimsItsBytes(connections: Int, flushStep: Int64) async throws {
        // Linux reports a lost write to one sync only; later ones succeed over the gap.
        // About 1.5 s whatever the connections, so that checkpoints come while it runs.
        serve { $0.bytesPerSecond = (2 << 20) / connections }
        try await withTestDirectory { dir in
            let syncs = Locked(0)
            var options = testOptions()
            options.engine.flushStep = flushStep
            options.engine.dataSync = { fd in
                let first = syncs.withLock { count in
                    count += 1
                    return count == 1
                }
                if first {
                    errno = EIO
                    return -1
                }
                return fdatasync(fd)
            }
            let yaml = manifest(
                url: server.url("/f"), sha256: sha(body), extra: "connections: \(connections)\nmin_segment: 256KiB")
            let report = try await sync(yaml, in: dir, options: options)
            let item = try #require(report.items.first)
            #expect(item.status == .failed)
            #expect(item.error?.code == .ioError)
            #expect(item.error?.message.contains("cannot sync") == true)
            #expect(report.exitCode == .local)
            #expect(!exists(dir + "/mirror/out.bin") && !exists(dir + "/mirror/out.bin.jgd"))
        }
    }
}
