import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

extension StateTests {
    /// One sync per tree (docs/state.md#one-sync-per-tree): nested roots and a locked tree are
    /// refused, shards of one count share a tree, and a part file another process holds is
    /// left to it.
    @Suite struct TreeLockTests: StateSuite {
        let server: TestServer
        let body = TestServer.bytes(count: 20_000, seed: 131)

        init() throws { server = try TestServer() }

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
                    #expect { try PartFile(path: path, fresh: true, root: root) } throws: {
                        ($0 as? TransferError)?.code == .locked
                    }
                    #expect { try PartFile(path: path, fresh: false, root: root) } throws: {
                        ($0 as? TransferError)?.code == .locked
                    }
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
    }
}
