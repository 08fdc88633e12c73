import Foundation
import JGMirror
import TestServer
import Testing

/// Rejected bytes are kept in `ROOT/.jgmirror/quarantine/`, never in the served tree
/// (issue 41, point 18), through the built binary.
@Suite struct QuarantineTests {
    let server: TestServer
    let body = TestServer.bytes(count: 6000, seed: 181)

    init() throws {
        server = try TestServer()
        server.set("/a.bin", TestServer.Route(body: body))
    }

    func manifest(sha256: String) -> String {
        "version: 1\nroot: mirror\nitems:\n  - {url: \(server.url("/a.bin")), dest: pool/a.bin, sha256: \(sha256)}\n"
    }

    /// Every name under `root`, outside `.jgmirror`, relative and sorted.
    func served(_ root: String) -> [String] {
        ((try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []).filter { !$0.hasPrefix(".jgmirror") }.sorted()
    }

    @Test func aMismatchKeepsTheBytesInTheStateFolderAndCleanRunsLeaveNoneInTheTree() async throws {
        try await withTestDirectory { dir in
            let path = write(manifest(sha256: String(repeating: "0", count: 64)), to: "m.yaml", in: dir)
            let bad = try await execute(["sync", path, "--report", dir + "/r.json", "--progress", "none"])
            #expect(bad.status == 3, "\(bad.stderr)")
            let kept = dir + "/mirror/.jgmirror/quarantine/pool/a.bin"
            #expect(fileSHA(kept) == sha(body))
            #expect(served(dir + "/mirror") == ["pool"], "\(served(dir + "/mirror"))")
            // The report and the terminal say where the bytes are.
            let item = (try loadReport(dir + "/r.json")["items"] as? [[String: Any]])?.first
            let message = (item?["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.hasSuffix("bytes kept in \(kept)"), "\(message)")
            #expect(bad.stderr.contains(".jgmirror/quarantine/pool/a.bin"), "\(bad.stderr)")
            // Fixed, then clean runs with --delete: the served tree holds the file alone.
            write(manifest(sha256: sha(body)), to: "m.yaml", in: dir)
            for _ in 0..<2 {
                let run = try await execute(["sync", path, "--delete", "--progress", "none"])
                #expect(run.status == 0, "\(run.stderr)")
                #expect(served(dir + "/mirror") == ["pool", "pool/a.bin"])
            }
        }
    }

    /// The `DEST.jgbad` an older version left beside a destination is moved into the
    /// quarantine by the next run, which says so.
    @Test func anOlderVersionsJgbadIsMovedIntoTheQuarantine() async throws {
        try await withTestDirectory { dir in
            let path = write(manifest(sha256: sha(body)), to: "m.yaml", in: dir)
            write("old bad bytes", to: "mirror/pool/a.bin.jgbad", in: dir)
            let run = try await execute(["sync", path, "--report", dir + "/r.json", "--progress", "none"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(served(dir + "/mirror") == ["pool", "pool/a.bin"])
            let kept = dir + "/mirror/.jgmirror/quarantine/pool/a.bin"
            #expect((try? String(contentsOfFile: kept, encoding: .utf8)) == "old bad bytes")
            let warnings = try loadReport(dir + "/r.json")["warnings"] as? [String] ?? []
            #expect(warnings.contains { $0.contains("moved") && $0.contains(kept) }, "\(warnings)")
        }
    }
}
