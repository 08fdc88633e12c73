import Foundation
import Synchronization
import TestServer
import Testing

/// A signed apt repository that `scripts/apt-repo.sh` builds with Debian's own tools
/// (dpkg-deb, apt-ftparchive, gpg) in a test's folder, served by the in-process test
/// server at `/debian/`: each file with a strong ETag, so a sync asks conditionally as
/// it would a real archive. `change` runs one of the script's commands (`next`,
/// `tamper`, `other-key`, `replay`, …) and serves the result.
final class AptUpstream: Sendable {
    /// The script, from this file's place in the package.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/apt-repo.sh").path
    /// Whether the tools the script and gpgv need are installed.
    static let toolsInstalled = ["dpkg-deb", "apt-ftparchive", "gpg", "gpgv", "xz"].allSatisfy { tool in
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }
    }
    static let skipReason: Comment =
        "needs dpkg-deb, apt-ftparchive, gpg, gpgv and xz (Debian's dpkg, apt-utils, gnupg, xz-utils)"

    let server: TestServer
    /// The script's folder: `repo/` (what is served), `keyring.gpg`, `keyring.asc`.
    let folder: String
    private let served = Mutex<Set<String>>([])

    /// Builds a repository in `dir/upstream` (`create` with `options`) and serves it.
    init(in dir: String, _ options: [String] = ["--packages", "6", "--size", "1"]) async throws {
        server = try TestServer()
        folder = dir + "/upstream"
        try await change("create", options)
    }

    /// The repository's base URL, as an `apt:` set names it.
    var base: String { server.url("/debian/") }
    var keyring: String { folder + "/keyring.gpg" }
    var repo: String { folder + "/repo" }

    /// Runs the script's `command` on the repository, then serves what it left.
    func change(_ command: String, _ arguments: [String] = []) async throws {
        try await Self.run(command, on: folder, arguments)
        serve()
    }

    /// Runs the script's `command` on the repository in `folder`; fails the test if it
    /// fails.
    static func run(_ command: String, on folder: String, _ arguments: [String] = []) async throws {
        let run = try await runProgram(script, [command, folder] + arguments)
        try #require(run.status == 0, "apt-repo.sh \(command): \(run.stderr)")
    }

    /// Serves every file of `repo/` at `/debian/PATH`; a file gone since answers 404.
    func serve() {
        let files = Self.files(under: repo)
        for path in files {
            guard let data = FileManager.default.contents(atPath: repo + "/" + path) else { continue }
            let route = TestServer.Route(body: [UInt8](data), etag: "\"\(sha([UInt8](data)))\"")
            server.set("/debian/" + path, route)
        }
        served.withLock { served in
            for gone in served.subtracting(files) { withdraw(gone) }
            served = files
        }
    }

    /// Answers 404 for `path` (relative to the repository) from now on.
    func withdraw(_ path: String) {
        var route = TestServer.Route(body: [])
        route.fault = { _ in .status(404) }
        server.set("/debian/" + path, route)
    }

    /// The regular files under `root` (a link to a folder followed), relative, outside `.jgmirror`.
    static func files(under root: String) -> Set<String> {
        let root = URL(fileURLWithPath: root).resolvingSymlinksInPath().path
        let all = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        return Set(
            all.filter { path in
                var info = stat()
                return !path.hasPrefix(".jgmirror") && lstat(root + "/" + path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
            })
    }

    /// Each file under `root` (outside `.jgmirror`) with its SHA-256.
    static func contents(of root: String) -> [String: String] {
        let root = URL(fileURLWithPath: root).resolvingSymlinksInPath().path
        var contents: [String: String] = [:]
        for path in files(under: root) { contents[path] = fileSHA(root + "/" + path) }
        return contents
    }
}
