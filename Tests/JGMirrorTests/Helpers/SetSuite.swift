import JGMirror
import TestServer

/// A suite of `sets:` against the release folder `/rel/` of the in-process origin (and
/// its copy at `/mirror/`): each instance has a `TestServer` of its own serving the
/// `files` that `serveRelease` made, and the helpers below write and serve their list.
protocol SetSuite {
    var server: TestServer { get }
    /// name → body, as the release folder `/rel/` serves them.
    var files: [String: [UInt8]] { get }
}

extension SetSuite {
    /// Five files, a name with a space and one in a subfolder among them, served at
    /// `/rel/NAME` and `/mirror/NAME` on `server`; returns them by name.
    static func serveRelease(on server: TestServer) -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for (index, name) in ["a.iso", "b.img", "notes.txt", "sub/c.iso", "with space.iso"].enumerated() {
            files[name] = TestServer.bytes(count: 40_000 + index * 777, seed: UInt64(700 + index))
        }
        for (name, body) in files {
            let encoded = name.replacingOccurrences(of: " ", with: "%20")
            server.set("/rel/" + encoded, TestServer.Route(body: body))
            server.set("/mirror/" + encoded, TestServer.Route(body: body))
        }
        return files
    }

    /// The list as coreutils writes it, both separators, a comment and a blank line.
    func sums(_ names: [String], extra: [String] = []) -> String {
        var lines = ["# release files", ""]
        for (index, name) in names.enumerated() {
            lines.append(sha(files[name] ?? []) + (index % 2 == 0 ? "  " : " *") + name)
        }
        return (lines + extra).joined(separator: "\n") + "\n"
    }

    /// Serves `text` as the list at `path`.
    func serveSums(_ text: String, at path: String = "/rel/SHA256SUMS") {
        server.set(path, TestServer.Route(body: Array(text.utf8)))
    }

    /// Loads and syncs `yaml` into `dir/mirror`; the run reads the sets' lists.
    func syncSets(_ yaml: String, in dir: String, planOptions: PlanOptions = PlanOptions()) async throws -> RunReport {
        let manifest = try Manifest.load(path: write(yaml, to: "m.yaml", in: dir))
        var options = planOptions
        options.root = dir + "/mirror"
        return try await SyncSession(plan: Plan(manifest: manifest, options: options), options: testOptions()).run()
    }

    /// The paths the server was asked for, lists and signatures left out.
    func fileRequests() -> [String] {
        server.requests().map(\.path).filter { !$0.hasSuffix("SUMS") && !$0.hasSuffix(".gpg") }
    }
}
