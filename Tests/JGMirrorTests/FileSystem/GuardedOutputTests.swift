import Foundation
import JGMirror
import TestServer
import Testing

/// No output replaces what the run keeps (docs/safety.md#output-files): a file inside
/// the root, however reached, a file of a published snapshot, the state, the manifest
/// or a keyring it names are refused before the run, exit 2, in one line naming the
/// option and the path. Through the built binary.
@Suite struct GuardedOutputTests {
    let server: TestServer
    let body = TestServer.bytes(count: 20_000, seed: 81)

    init() throws {
        server = try TestServer()
        server.set("/one", TestServer.Route(body: body))
    }

    /// One item, `one.bin`, mirrored into `dir/mirror`; a set signed with a keyring
    /// beside the manifest when `signed`.
    func manifest(in dir: String, signed: Bool = false) -> String {
        var yaml =
            "version: 1\nroot: mirror\nitems:\n  - url: \(server.url("/one"))\n    dest: one.bin\n    sha256: \(sha(body))\n"
        if signed {
            write("not really keys", to: "keys.gpg", in: dir)
            yaml += """
                sets:
                  - sums: \(server.url("/SHA256SUMS"))
                    signature: \(server.url("/SHA256SUMS.gpg"))
                    keyring: keys.gpg
                    dest: rel/

                """
        }
        return write(yaml, to: "m.yaml", in: dir)
    }

    /// Runs `arguments` in `dir`, which must be refused: exit 2, one line naming
    /// `option` and `given` and saying `why`, no request made.
    func expectRefused(_ arguments: [String], in dir: String, option: String, given: String, why: String) async throws {
        let before = server.requests().count
        let run = try await execute(arguments + ["--progress", "none", option, given], in: dir)
        #expect(run.status == 2, "\(arguments) \(option) \(given): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("jgmirror: \(option) \(given): \(why)"), "\(run.stderr)")
        #expect(server.requests().count == before)
    }

    @Test func anOutputInsideTheRootIsRefusedHoweverReached() async throws {
        try await withTestDirectory { dir in
            let path = manifest(in: dir)
            let first = try await execute(["sync", path, "--progress", "none"], in: dir)
            #expect(first.status == 0, "\(first.stderr)")
            // A link outside the root that leads into it.
            try FileManager.default.createSymbolicLink(atPath: dir + "/inside", withDestinationPath: "mirror")
            let inside = "inside the mirror's root \(dir)/mirror"
            for (option, given) in [
                ("--report", "mirror/one.bin"), ("--junit", dir + "/mirror/new.xml"), ("--metrics", "inside/m.prom"),
                ("--events", "mirror/.jgmirror/state.sqlite"), ("--report", "mirror/sub/../one.bin"),
            ] {
                try await expectRefused(["sync", "m.yaml"], in: dir, option: option, given: given, why: inside)
            }
            // verify reads the tree and writes no more into it than sync.
            try await expectRefused(["verify", "m.yaml"], in: dir, option: "--report", given: "mirror/one.bin", why: inside)
            // A root given on the command line, not made yet.
            try await expectRefused(
                ["sync", "m.yaml", "--root", "elsewhere"], in: dir, option: "--report", given: "elsewhere/r.json",
                why: "inside the mirror's root \(dir)/elsewhere")
            #expect(fileSHA(dir + "/mirror/one.bin") == sha(body))
            #expect(!exists(dir + "/mirror/new.xml") && !exists(dir + "/elsewhere"))
            // Beside the root is fine.
            let beside = try await execute(["sync", "m.yaml", "--progress", "none", "--report", "r.json"], in: dir)
            #expect(beside.status == 0, "\(beside.stderr)")
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 0)
        }
    }

    @Test func aFileOfThePublishedSnapshotIsRefused() async throws {
        try await withTestDirectory { dir in
            let path = manifest(in: dir)
            let first = try await execute(["sync", path, "--progress", "none", "--publish", "snapshot"], in: dir)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(fileSHA(dir + "/mirror/current/one.bin") == sha(body))
            try await expectRefused(
                ["sync", "m.yaml", "--publish", "snapshot"], in: dir, option: "--report", given: "mirror/current/one.bin",
                why: "inside the mirror's root \(dir)/mirror")
            #expect(fileSHA(dir + "/mirror/current/one.bin") == sha(body))
        }
    }

    @Test func theManifestAndAKeyringAreRefused() async throws {
        try await withTestDirectory { dir in
            _ = manifest(in: dir, signed: true)
            try await expectRefused(
                ["sync", "m.yaml"], in: dir, option: "--metrics", given: "m.yaml",
                why: "the manifest, which no output may replace")
            try await expectRefused(
                ["sync", "m.yaml"], in: dir, option: "--events", given: "./keys.gpg",
                why: "the keyring \(dir)/keys.gpg, which no output may replace")
            #expect(try String(contentsOfFile: dir + "/keys.gpg", encoding: .utf8) == "not really keys")
            #expect(try String(contentsOfFile: dir + "/m.yaml", encoding: .utf8).hasPrefix("version: 1\n"))
        }
    }

    @Test func getRefusesAReportOverItsDestinationAndTakesOneBesideIt() async throws {
        try await withTestDirectory { dir in
            try await expectRefused(
                ["get", server.url("/one"), "-o", "one.bin"], in: dir, option: "--report", given: "one.bin",
                why: "the destination of -o, which no output may replace")
            try await expectRefused(
                ["get", server.url("/one"), "-o", "."], in: dir, option: "--report", given: "one",
                why: "the destination of -o, which no output may replace")
            let run = try await execute(
                ["get", server.url("/one"), "-o", "one.bin", "--report", "r.json", "--progress", "none"], in: dir)
            #expect(run.status == 0, "\(run.stderr)")
            #expect(fileSHA(dir + "/one.bin") == sha(body))
            #expect(try loadReport(dir + "/r.json")["exit_code"] as? Int == 0)
        }
    }
}
