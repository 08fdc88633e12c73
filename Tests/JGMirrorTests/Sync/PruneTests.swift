import Foundation
import GRDB
import TestServer
import Testing

@testable import JGMirror

extension StateTests {
    /// `--delete` removes what no item produces (docs/deletions.md#when-sync-deletes) and
    /// leaves symlinks, live part files and names that are not UTF-8; `--max-delete` and a
    /// filter refuse before anything is deleted or fetched (docs/deletions.md#guards).
    @Suite struct PruneTests: StateSuite {
        let server: TestServer
        let body = TestServer.bytes(count: 20_000, seed: 131)

        init() throws { server = try TestServer() }

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
            try FileManager.default.createSymbolicLink(
                atPath: root + "/link.txt", withDestinationPath: dir + "/outside/secret.txt")
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
    }
}
