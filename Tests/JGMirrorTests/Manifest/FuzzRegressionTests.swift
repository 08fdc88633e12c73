import Foundation
import Testing

@testable import JGMirror

/// Inputs of the kind the libFuzzer target (Fuzz/run.sh) explores: each must give a
/// manifest or a positioned error, never a crash. Crashers it finds are added here.
@Suite struct FuzzRegressionTests {
    @Test(arguments: [
        "",
        "\u{0}",
        "version: 1\nitems: &a [*a]\n",
        "version: 1\nitems:\n  - &x {url: http://h/a}\n  - *x\n",
        "version: 1\ndefaults: &d {connections: 2}\nitems:\n  - {<<: *d, url: http://h/a}\n",
        String(repeating: "[", count: 10_000),
        "version: 1\nitems:\n" + String(repeating: "  - ", count: 500) + "url: http://h/a\n",
        "version: !!binary aGk=\nitems: []\n",
        "version: 1\nitems:\n  - url: http://h/a\n    size: 99999999999999999999999GiB\n",
        "version: 1\nitems:\n  - url: http://h/a\n    connections: -9223372036854775808\n",
        "version: 1\nitems:\n  - url: http://h/a\n    timeout: 1e308s\n",
        "version: 1\nitems:\n  - url: \"http://h/\\u0000\"\n    dest: \"a\\u0000b\"\n",
        "version: 1\nitems:\n  - url: http://h/${UNSET\n",
        "version: 1\nitems:\n  - url: http://[::1\n",
        "version: 1\nitems:\n  - url: http://h/a\n    dest: \"\"\n",
        "version: 1\nitems:\n  - url: http://h/\n    dest: ./\n",
        "version: 1\n---\nversion: 1\n",
        "\u{FEFF}version: 1\nitems: []\n",
        "version: 1\nitems:\n\t- url: http://h/a\n",
        "version: 1\nitems:\n  - url: http://h/a\n    headers: {\"\": x, \"A:B\": \"c\\r\\nInjected: 1\"}\n",
    ])
    func adversarialInputNeverCrashes(yaml: String) {
        do {
            let manifest = try Manifest.parse(yaml, name: "f.yaml")
            _ = Plan(manifest: manifest)
        } catch {
            #expect(error.location != nil, "\(error.message)")
            #expect(error.localizedDescription.hasPrefix("f.yaml:"))
        }
    }

    @Test func invalidUTF8IsAPositionedError() {
        let bytes: [UInt8] = Array("version: 1\nitems:\n  - url: http://h/".utf8) + [0xFF, 0xFE, 0x0A]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-\(UUID().uuidString).yaml").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ManifestError.self) { try Manifest.load(path: path) }
    }
}

/// Paths of the kind the path fuzzer (`Fuzz/run.sh paths`) explores, through both
/// resolutions: each is created below the root or refused, and nothing outside the
/// root is created, changed or opened. Crashers it finds are added here.
@Suite struct PathFuzzRegressionTests {
    @Test(arguments: [
        "a/b/c.bin", "link/x", "link", "leaf", "leaf/x", "real/../link/x", "real/../../outside/secret", "..", "../x",
        "./link/./x",
        "real//link", "real/./../leaf", "/etc/passwd", "", ".", "...", "a\u{0}b", "link/", "real/leaf",
        String(repeating: "d/", count: 300) + "f",
        String(repeating: "x", count: 300), "é/\u{FFFD}/ok",
    ])
    func adversarialPathsStayInsideTheRoot(relative: String) async throws {
        try await withTestDirectory { dir in
            let manager = FileManager.default
            _ = try RootDirectoryTests().tree(dir)
            let realRoot = try #require(Paths.canonical(dir + "/root"))
            for resolution in [RootDirectory.Resolution.openat2, .componentWalk] {
                let root = try RootDirectory(path: dir + "/root", resolution: resolution)
                for path in [dir + "/root/" + relative, relative] {
                    try? root.makeFolders(Paths.parent(of: path))
                    if let fd = try? root.openFile(path, flags: O_WRONLY | O_CREAT) {
                        let target = try manager.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
                        close(fd)
                        #expect(target.hasPrefix(realRoot + "/"), "\(resolution) opened \(target)")
                    }
                    try? root.rename(path, to: dir + "/root/real/moved")
                    root.unlink(dir + "/root/real/moved")
                }
                #expect(try manager.contentsOfDirectory(atPath: dir + "/outside") == ["secret"])
                #expect(try String(contentsOfFile: dir + "/outside/secret", encoding: .utf8) == "secret")
            }
        }
    }
}
