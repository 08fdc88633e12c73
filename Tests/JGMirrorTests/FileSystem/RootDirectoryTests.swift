import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Which names a path below the root may have.
@Suite struct RootPathTests {
    @Test func namesAreSplitAndCleaned() throws {
        #expect(try RootPath.components("a/b/c.bin").get() == ["a", "b", "c.bin"])
        #expect(try RootPath.components("a//./b/").get() == ["a", "b"])
        #expect(try RootPath.components("").get() == [])
        #expect(try RootPath.components(".").get() == [])
        #expect(try RootPath.components("...").get() == ["..."])
        #expect(try RootPath.components("é/..x").get() == ["é", "..x"])
    }

    @Test(arguments: [
        ("..", RootPath.Refusal.parent), ("a/../b", .parent), ("a/..", .parent), ("/etc/passwd", .absolute), ("//x", .absolute),
        ("a\u{0}b", .nul),
    ])
    func escapesAreRefused(path: String, refusal: RootPath.Refusal) {
        #expect(throws: refusal) { try RootPath.components(path).get() }
    }
}

/// The walker on disk, each case under both resolutions: `openat2` (where the
/// kernel has it; elsewhere it falls back to the walk) and the component walk.
@Suite struct RootDirectoryTests {
    /// `root/` with `root/real/`, `root/link -> outside/`, `root/leaf -> outside/secret`, and `outside/secret`.
    func tree(_ dir: String) throws -> (root: String, outside: String) {
        let manager = FileManager.default
        try manager.createDirectory(atPath: dir + "/root/real", withIntermediateDirectories: true)
        try manager.createDirectory(atPath: dir + "/outside", withIntermediateDirectories: true)
        try Data("secret".utf8).write(to: URL(fileURLWithPath: dir + "/outside/secret"))
        try manager.createSymbolicLink(atPath: dir + "/root/link", withDestinationPath: dir + "/outside")
        try manager.createSymbolicLink(atPath: dir + "/root/leaf", withDestinationPath: dir + "/outside/secret")
        return (dir + "/root", dir + "/outside")
    }

    func expectUnsafe(_ body: () throws -> Void, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected unsafe_path", sourceLocation: sourceLocation)
        } catch let error as TransferError {
            #expect(error.code == .unsafePath, "\(error.message)", sourceLocation: sourceLocation)
            #expect(error.code.isLocal, sourceLocation: sourceLocation)
        } catch {
            Issue.record(error, sourceLocation: sourceLocation)
        }
    }

    @Test func defaultResolutionIsOpenat2WhereTheKernelHasIt() async throws {
        try await withTestDirectory { dir in
            let root = try RootDirectory(path: dir)
            // Linux 5.6+ has openat2; a kernel or sandbox without it gets the walk.
            #expect(root.resolution == (RootDirectory.kernelHasOpenat2 ? .openat2 : .componentWalk))
        }
    }

    @Test(arguments: [RootDirectory.Resolution.openat2, .componentWalk])
    func aSymlinkedFolderInTheMiddleIsNeverFollowed(resolution: RootDirectory.Resolution) async throws {
        try await withTestDirectory { dir in
            let (rootPath, outside) = try tree(dir)
            let root = try RootDirectory(path: rootPath, resolution: resolution)
            // Each resolution explains the refusal in its own words: both paths ran.
            do {
                _ = try root.openFile(rootPath + "/link/new.bin", flags: O_WRONLY | O_CREAT)
                Issue.record("expected unsafe_path")
            } catch let error as TransferError {
                #expect(error.code == .unsafePath)
                if resolution == .componentWalk || !RootDirectory.kernelHasOpenat2 {
                    #expect(error.message.contains("the symbolic link 'link'"), "\(error.message)")
                } else {
                    #expect(error.message.contains("goes through a symbolic link below"), "\(error.message)")
                }
            }
            expectUnsafe { _ = try root.openFile(rootPath + "/link/secret", flags: O_RDONLY) }
            expectUnsafe { try root.makeFolders(rootPath + "/link/sub/deeper") }
            expectUnsafe { _ = try root.openFolder(rootPath + "/link") }
            expectUnsafe { try root.rename(rootPath + "/link/secret", to: rootPath + "/real/stolen") }
            try Data("x".utf8).write(to: URL(fileURLWithPath: rootPath + "/real/x"))
            expectUnsafe { try root.rename(rootPath + "/real/x", to: rootPath + "/link/x") }
            expectUnsafe { _ = try root.fileStatus(rootPath + "/link/secret") }
            #expect(root.status(rootPath + "/link/secret") == nil)
            #expect(!root.unlink(rootPath + "/link/secret"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == ["secret"])
            #expect(exists(rootPath + "/real/x"))
        }
    }

    @Test(arguments: [RootDirectory.Resolution.openat2, .componentWalk])
    func aSymlinkAtTheLeafIsNeverFollowed(resolution: RootDirectory.Resolution) async throws {
        try await withTestDirectory { dir in
            let (rootPath, outside) = try tree(dir)
            let root = try RootDirectory(path: rootPath, resolution: resolution)
            expectUnsafe { _ = try root.openFile(rootPath + "/leaf", flags: O_WRONLY | O_TRUNC) }
            expectUnsafe { _ = try root.openFile(rootPath + "/leaf", flags: O_RDONLY) }
            expectUnsafe { _ = try root.fileStatus(rootPath + "/leaf") }
            expectUnsafe { try root.makeFolders(rootPath + "/leaf") }
            // The link itself can be looked at, replaced and removed: none of that reaches its target.
            #expect(root.status(rootPath + "/leaf").map { $0.st_mode & S_IFMT } == S_IFLNK)
            try Data("new".utf8).write(to: URL(fileURLWithPath: rootPath + "/real/new"))
            try root.rename(rootPath + "/real/new", to: rootPath + "/leaf")
            #expect(try String(contentsOfFile: rootPath + "/leaf", encoding: .utf8) == "new")
            #expect(try String(contentsOfFile: outside + "/secret", encoding: .utf8) == "secret")
        }
    }

    @Test(arguments: [RootDirectory.Resolution.openat2, .componentWalk])
    func pathsOutsideTheRootAreRefused(resolution: RootDirectory.Resolution) async throws {
        try await withTestDirectory { dir in
            let (rootPath, outside) = try tree(dir)
            let root = try RootDirectory(path: rootPath, resolution: resolution)
            expectUnsafe { _ = try root.openFile(rootPath + "/real/../../outside/secret", flags: O_RDONLY) }
            expectUnsafe { _ = try root.openFile(rootPath + "/../outside/new", flags: O_WRONLY | O_CREAT) }
            expectUnsafe { _ = try root.openFile(outside + "/secret", flags: O_RDONLY) }
            expectUnsafe { _ = try root.openFile("/etc/passwd", flags: O_RDONLY) }
            expectUnsafe { _ = try root.openFile("real/x", flags: O_RDONLY) }
            // A sibling whose name starts with the root's is not inside it.
            expectUnsafe { try root.makeFolders(rootPath + "-evil/x") }
            expectUnsafe { _ = try root.openFile(rootPath, flags: O_RDONLY) }
            #expect(!exists(rootPath + "-evil") && !exists(outside + "/new"))
        }
    }

    @Test(arguments: [RootDirectory.Resolution.openat2, .componentWalk])
    func ordinaryWorkBelowTheRootStillWorks(resolution: RootDirectory.Resolution) async throws {
        try await withTestDirectory { dir in
            let (rootPath, _) = try tree(dir)
            let root = try RootDirectory(path: rootPath + "/", resolution: resolution)
            try root.makeFolders(rootPath + "/a/b/c")
            try root.makeFolders(rootPath + "/a/b/c")  // again: already there
            let fd = try root.openFile(rootPath + "/a/b/c/f.jgpart", flags: O_WRONLY | O_CREAT | O_EXCL)
            #expect(Glibc.write(fd, "abc", 3) == 3)
            close(fd)
            try root.rename(rootPath + "/a/b/c/f.jgpart", to: rootPath + "/a/./f")
            #expect(try root.fileStatus(rootPath + "/a/f").st_size == 3)
            let folder = try root.openFolder(rootPath + "/a/b")
            #expect(fsync(folder) == 0)
            close(folder)
            let top = try root.openFolder(rootPath)
            close(top)
            #expect(root.unlink(rootPath + "/a/f") && !exists(rootPath + "/a/f"))
            // A plain file where a folder is expected is an ordinary local error, not unsafe.
            try Data().write(to: URL(fileURLWithPath: rootPath + "/file"))
            do {
                try root.makeFolders(rootPath + "/file/sub")
                Issue.record("expected a failure")
            } catch let error as TransferError {
                #expect(error.code == .ioError, "\(error.message)")
            }
        }
    }
}

/// Confinement to the root (docs/safety.md#confinement-to-the-root) end to end: a folder swapped
/// for a symlink while the run is under way.
@Suite struct SwappedFolderTests {
    let server: TestServer
    init() throws { server = try TestServer() }

    @Test func aFolderSwappedForASymlinkDuringTheRunIsNotWrittenThrough() async throws {
        let slow = TestServer.bytes(count: 1 << 20, seed: 1)
        let small = TestServer.bytes(count: 40_000, seed: 2)
        // A hangs at its first origin until the test stops that origin; then it moves
        // to its mirror and completes. No timing is assumed.
        let stalling = try TestServer()
        var stuck = TestServer.Route(body: slow)
        stuck.fault = { _ in .stall(afterBytes: 1000, seconds: 600) }
        stalling.set("/a", stuck)
        server.set("/a", TestServer.Route(body: slow))
        server.set("/b", TestServer.Route(body: small))
        try await withTestDirectory { dir in
            let root = dir + "/root"
            let elsewhere = dir + "/elsewhere"
            try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
            let path = write(
                """
                version: 1
                root: root
                items:
                  - {url: \(stalling.url("/a")), mirrors: [\(server.url("/a"))], dest: a.bin, sha256: \(sha(slow)), connections: 1, retries: 0, timeout: 10m}
                  - {url: \(server.url("/b")), dest: later/s1.bin, sha256: \(sha(small)), connections: 1}
                """, to: "m.yaml", in: dir)
            let (process, out, err) = try launch(["sync", path, "--jobs", "1", "--progress", "none", "--report", dir + "/r.json"])
            // While A downloads (B waits for the one job slot), `later` becomes a symlink.
            let underWay = await waitFor(seconds: 60) {
                !stalling.requests("/a").isEmpty && exists(root + "/a.bin.jgpart") && exists(root + "/later")
            }
            #expect(underWay, "a.bin.jgpart: \(exists(root + "/a.bin.jgpart")), later: \(exists(root + "/later"))")
            try FileManager.default.removeItem(atPath: root + "/later")
            try FileManager.default.createSymbolicLink(atPath: root + "/later", withDestinationPath: elsewhere)
            stalling.stop()
            #expect(await waitFor(seconds: 120, process: process))
            _ = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 4, "\(stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
            #expect(fileSHA(root + "/a.bin") == sha(slow))
            let items = try #require(try loadReport(dir + "/r.json")["items"] as? [[String: Any]])
            let b = try #require(items.first { $0["dest"] as? String == "later/s1.bin" })
            #expect(b["status"] as? String == "failed")
            let error = try #require(b["error"] as? [String: Any])
            #expect(error["code"] as? String == "unsafe_path")
            #expect((error["message"] as? String)?.contains("symbolic link") ?? false, "\(error)")
        }
    }

    @Test func verifyDoesNotReadThroughASymlinkedFolder() async throws {
        let body = TestServer.bytes(count: 1000, seed: 3)
        try await withTestDirectory { dir in
            // Even a link that stays inside the root is not followed.
            try FileManager.default.createDirectory(atPath: dir + "/root/elsewhere", withIntermediateDirectories: true)
            try Data(body).write(to: URL(fileURLWithPath: dir + "/root/elsewhere/f.bin"))
            let path = write(
                "version: 1\nroot: root\nitems:\n  - {url: http://127.0.0.1:9/f.bin, dest: sub/f.bin, sha256: \(sha(body))}\n",
                to: "m.yaml", in: dir)
            let plan = Plan(manifest: try Manifest.load(path: path))
            // Swapped in after planning, as a co-tenant of the tree could.
            try FileManager.default.createSymbolicLink(atPath: dir + "/root/sub", withDestinationPath: dir + "/root/elsewhere")
            let report = try await Verification.run(plan: plan)
            #expect(report.items.first?.status == .failed)
            #expect(report.items.first?.error?.code == .unsafePath)
            #expect(report.exitCode == .local)
        }
    }
}
