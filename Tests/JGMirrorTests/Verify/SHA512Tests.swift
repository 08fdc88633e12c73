import Foundation
import JGMirror
import TestServer
import Testing

/// `sha512:` on items and SHA512SUMS lists in sets.
@Suite struct SHA512Tests {
    let server: TestServer

    init() throws { server = try TestServer() }

    @Test func itemWithSHA512IsVerifiedThenUnchangedAndAWrongOneIsAMismatch() async throws {
        let body = TestServer.bytes(count: 3 << 20, seed: 512)
        server.set("/big", TestServer.Route(body: body))
        let good = try await sha512(body)
        try await withTestDirectory { dir in
            let yaml = manifest(url: server.url("/big"), extra: "sha512: \(good)\nconnections: 3\nmin_segment: 256KiB")
            let first = try await sync(yaml, in: dir)
            #expect(first.exitCode == .success)
            #expect(first.items.first?.status == .downloaded)
            #expect(first.items.first?.sha512Actual == good && first.items.first?.sha512Expected == good)
            #expect(fileSHA(dir + "/mirror/out.bin") == sha(body))
            let requests = server.requests().count
            let second = try await sync(yaml, in: dir)
            #expect(second.items.first?.status == .unchanged)
            #expect(server.requests().count == requests)

            let verify = try await execute(["verify", dir + "/manifest.yaml", "--root", dir + "/mirror", "--report", "-"])
            #expect(verify.status == 0)
            #expect(verify.stdout.contains("\"sha512_actual\": \"\(good)\""))
        }
        try await withTestDirectory { dir in
            let wrong = String(good.reversed())
            let report = try await sync(manifest(url: server.url("/big"), extra: "sha512: \(wrong)"), in: dir)
            #expect(report.exitCode == .integrity)
            #expect(report.items.first?.status == .mismatch)
            #expect(report.items.first?.error?.message.contains("SHA-512 is \(good)") == true)
            #expect(!exists(dir + "/mirror/out.bin") && exists(dir + "/mirror/.jgmirror/quarantine/out.bin"))
        }
    }

    @Test func sha256AndSha512TogetherAreRefused() {
        let text =
            "version: 1\nitems:\n  - url: http://h/x\n    sha256: \(String(repeating: "a", count: 64))\n    sha512: \(String(repeating: "b", count: 128))\n"
        #expect(throws: ManifestError.self) { try Manifest.parse(text) }
        #expect(throws: ManifestError.self) { try Manifest.parse("version: 1\nitems:\n  - url: http://h/x\n    sha512: abc\n") }
    }

    @Test func sha512SumsListVerifiesEachFile() async throws {
        let a = TestServer.bytes(count: 50_000, seed: 5120)
        let b = TestServer.bytes(count: 60_000, seed: 5121)
        server.set("/rel/a.iso", TestServer.Route(body: a))
        server.set("/rel/b.iso", TestServer.Route(body: b))
        // b's line carries a's hash: b must fail, a must land.
        let sumA = try await sha512(a)
        let list = "\(sumA)  a.iso\n\(sumA) *b.iso\n"
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array(list.utf8)))
        try await withTestDirectory { dir in
            var manifest = try Manifest.load(
                path: write("version: 1\nsets:\n  - sums: \(server.url("/rel/SHA512SUMS"))\n", to: "m.yaml", in: dir))
            try await manifest.expandSets(options: testOptions())
            var options = PlanOptions()
            options.root = dir + "/mirror"
            let report = try await SyncSession(plan: Plan(manifest: manifest, options: options), options: testOptions()).run()
            #expect(report.items.first { $0.dest == "a.iso" }?.status == .downloaded)
            #expect(report.items.first { $0.dest == "b.iso" }?.status == .mismatch)
            #expect(report.exitCode == .integrity)
            #expect(fileSHA(dir + "/mirror/a.iso") == sha(a))
        }
    }
}

extension SHA512Tests {
    @Test func checksumsEntryWithASHA512SumsListVerifiesItsItems() async throws {
        let body = TestServer.bytes(count: 70_000, seed: 5122)
        server.set("/rel/c.iso", TestServer.Route(body: body))
        server.set("/rel/d.iso", TestServer.Route(body: body))
        let right = try await sha512(body)
        let wrong = String(right.reversed())
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array("\(right)  c.iso\n\(wrong)  d.iso\n".utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(server.url("/rel/SHA512SUMS"))]
                items:
                  - url: \(server.url("/rel/c.iso"))
                  - url: \(server.url("/rel/d.iso"))
                """
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first { $0.dest == "c.iso" }?.status == .downloaded)
            #expect(report.items.first { $0.dest == "c.iso" }?.sha512Expected == right)
            #expect(report.items.first { $0.dest == "d.iso" }?.status == .mismatch)
        }
    }
}

extension SHA512Tests {
    /// Lists can give an item both digests: a wrong SHA-256 is a mismatch even when a
    /// SHA-512 list is right, in sync, in the next sync's look at the file and in verify.
    @Test func aWrongSHA256BesideARightSHA512IsAMismatch() async throws {
        let body = TestServer.bytes(count: 40_000, seed: 5123)
        server.set("/rel/e.iso", TestServer.Route(body: body))
        let right = try await sha512(body)
        server.set("/rel/SHA512SUMS", TestServer.Route(body: Array("\(right)  e.iso\n".utf8)))
        server.set("/rel/SHA256SUMS", TestServer.Route(body: Array("\(String(sha(body).reversed()))  e.iso\n".utf8)))
        try await withTestDirectory { dir in
            let yaml = """
                version: 1
                checksums: [\(server.url("/rel/SHA512SUMS")), \(server.url("/rel/SHA256SUMS"))]
                items:
                  - url: \(server.url("/rel/e.iso"))
                """
            let report = try await sync(yaml, in: dir)
            #expect(report.items.first?.status == .mismatch && report.exitCode == .integrity, "\(report.items)")
            // The hash came from a list, not the manifest: the message says only what was expected.
            let message = report.items.first?.error?.message ?? ""
            #expect(message.hasPrefix("SHA-256 is \(sha(body)), expected \(String(sha(body).reversed()))"), "\(message)")
            // The right bytes in place, as a run trusting SHA-512 alone would have left them.
            try Data(body).write(to: URL(fileURLWithPath: dir + "/mirror/e.iso"))
            let again = try await sync(yaml, in: dir)
            #expect(again.items.first?.status == .mismatch, "\(again.items)")
            try Data(body).write(to: URL(fileURLWithPath: dir + "/mirror/e.iso"))
            var options = PlanOptions()
            options.root = dir + "/mirror"
            var plan = Plan(manifest: try Manifest.load(path: dir + "/manifest.yaml"), options: options)
            _ = try await plan.applyChecksumLists(options: testOptions())
            let verified = try await Verification.run(plan: plan)
            #expect(verified.items.first?.status == .mismatch && verified.exitCode == .integrity, "\(verified.items)")
        }
    }
}
