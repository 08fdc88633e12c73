import Foundation
import JGMirror
import TestServer
import Testing

/// A set's signed list (docs/manifest.md#sets): checked against the keyring before any
/// of its files is fetched or deleted; a bad, missing or stranger's signature fails the list.
@Suite struct SignedListTests: SetSuite {
    let server: TestServer
    /// name → body, as the release folder `/rel/` serves them.
    let files: [String: [UInt8]]

    init() throws {
        server = try TestServer()
        files = Self.serveRelease(on: server)
    }

    @Test func goodSignatureIsAccepted() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .success)
                #expect(report.items.count == 2 && report.items.allSatisfy { $0.status == .downloaded })
            }
        }
    }

    @Test func tamperedListFailsEveryItemWithSignatureAndFetchesNothing() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            serveSums(text.replacingOccurrences(of: "b.img", with: "notes.txt"))
            try await withTestDirectory { dir in
                let out = outputs(beside: dir)
                let path = write(signedSet(keyring: keys.keyring), to: "m.yaml", in: dir)
                let run = try await execute(["sync", path, "--report", out + "/r.json", "--progress", "none"])
                #expect(run.status == 3)
                let items = try #require(try loadReport(out + "/r.json")["items"] as? [[String: Any]])
                #expect(items.count == 2)
                for item in items {
                    #expect(item["status"] as? String == "failed")
                    #expect((item["error"] as? [String: Any])?["code"] as? String == "signature")
                }
                #expect(((items.first?["error"] as? [String: Any])?["message"] as? String)?.contains("BAD signature") == true)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    /// A list whose signature fails decides nothing: cut, it does not make `--delete`
    /// remove what it leaves out; empty, its set fails with `signature`.
    @Test func aListWhoseSignatureFailsDeletesNothing() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso", "b.img"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.trusted)))
            try await withTestDirectory { dir in
                let yaml = signedSet(keyring: keys.keyring).replacingOccurrences(
                    of: "version: 1\n", with: "version: 1\nroot: mirror\n")
                let path = write(yaml, to: "m.yaml", in: dir)
                #expect(try await execute(["sync", path, "--delete", "--progress", "none"]).status == 0)
                let root = dir + "/mirror/"
                let placed = try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }
                    .sorted()
                // Someone cuts the list and cannot sign it.
                serveSums(sums(["a.iso"]))
                let cut = try await execute(["sync", path, "--delete", "--progress", "none"])
                #expect(cut.status == 3, "\(cut.stderr)")
                #expect(
                    try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }.sorted()
                        == placed)
                serveSums("")
                let empty = try await execute(["sync", path, "--delete", "--progress", "none"])
                #expect(empty.status == 3 && empty.stderr.contains("SHA256SUMS names no file, and"), "\(empty.stderr)")
                let plan = try await execute(["plan", path, "--delete"])
                #expect(!plan.stdout.contains("delete "), "\(plan.stdout)")
                #expect(
                    try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix(".jgmirror") }.sorted()
                        == placed)
            }
        }
    }

    @Test func signatureByAKeyOutsideTheKeyringIsRefused() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso"])
            serveSums(text)
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.stranger)))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first?.error?.code == .signature)
                #expect(report.items.first?.error?.message.contains("No public key") == true)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    @Test func missingSignatureFailsTheList() async throws {
        try await withKeys { keys in
            serveSums(sums(["a.iso"]))
            try await withTestDirectory { dir in
                let report = try await syncSets(signedSet(keyring: keys.keyring), in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first?.error?.code == .signature)
                #expect(fileRequests().isEmpty)
            }
        }
    }

    @Test func signedChecksumsEntryFailsTheItemsItCovers() async throws {
        try await withKeys { keys in
            let text = sums(["a.iso"])
            server.set("/rel/SHA256SUMS.gpg", TestServer.Route(body: try keys.sign(text, with: keys.stranger)))
            serveSums(text)
            try await withTestDirectory { dir in
                let yaml = """
                    version: 1
                    checksums:
                      - url: \(server.url("/rel/SHA256SUMS"))
                        signature: \(server.url("/rel/SHA256SUMS.gpg"))
                        keyring: \(keys.keyring)
                    items:
                      - url: \(server.url("/rel/a.iso"))
                      - url: \(server.url("/mirror/b.img"))
                    """
                let report = try await sync(yaml, in: dir)
                #expect(report.exitCode == .integrity)
                #expect(report.items.first { $0.dest == "a.iso" }?.error?.code == .signature)
                #expect(report.items.first { $0.dest == "b.img" }?.status == .unverified)
                #expect(server.requests("/rel/a.iso").isEmpty)
            }
        }
    }

    @Test func signatureWithoutKeyringIsAManifestError() throws {
        #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nsets:\n  - sums: http://h/SHA256SUMS\n    signature: http://h/SHA256SUMS.gpg\n")
        }
    }

    func signedSet(keyring: String) -> String {
        """
        version: 1
        sets:
          - sums: \(server.url("/rel/SHA256SUMS"))
            signature: \(server.url("/rel/SHA256SUMS.gpg"))
            keyring: \(keyring)
        """
    }
}
