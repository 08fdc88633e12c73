import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Names in `redact` mask query parameters of that name too (docs/safety.md#redaction).
@Suite struct QueryRedactionTests {
    @Test func queryParametersNamedInRedactAreMasked() {
        let redactor = Redactor(redact: ["Token", "sig"], urls: ["https://h/f?token=s3cr3t&x=1"])
        #expect(redactor.redact(url: "https://u:p@h/f?token=s3cr3t&x=1#frag") == "https://***@h/f?token=***&x=1#frag")
        #expect(redactor.redact(url: "https://h/f?x=1&TOKEN=a&Sig=b&token=") == "https://h/f?x=1&TOKEN=***&Sig=***&token=***")
        // Only whole names after ? or &: a path or another parameter that merely contains the name is left alone.
        #expect(redactor.redact(url: "https://h/token=1?mytoken=2&token2=3") == "https://h/token=1?mytoken=2&token2=3")
        // In free text: every URL, whatever its token, and the known value wherever it appears.
        #expect(
            redactor.redact("HTTP 404 from https://cdn/f?sig=other (was https://h/f?token=s3cr3t), value s3cr3t")
                == "HTTP 404 from https://cdn/f?sig=*** (was https://h/f?token=***), value ***")
        #expect(
            redactor.redact("'https://h/?token=a'\n\"https://h/?token=b\"") == "'https://h/?token=***'\n\"https://h/?token=***\"")
        // No names: nothing but credentials changes.
        #expect(Redactor().redact(url: "https://h/f?token=a") == "https://h/f?token=a")
    }

    /// Messages written before `redact` is known (a malformed URL in the manifest) or
    /// outside any item (a checksums list) mask every query value.
    @Test func messagesWithoutRedactNamesMaskEveryQueryValue() throws {
        #expect(
            Redactor.redactURLAndQuery("https://u:p@h/f?token=s3cr3t&x=1&flag#frag")
                == "https://***@h/f?token=***&x=***&flag#frag")
        #expect(Redactor.redactURLAndQuery("https://h/f") == "https://h/f")
        let problem = try #require(Rules.urlProblem("https://?token=s3cr3t", allowFileURLs: false))
        #expect(!problem.contains("s3cr3t"))
        let error = #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nitems:\n  - url: https://?token=s3cr3t\n", name: "m.yaml")
        }
        #expect(error?.errorDescription?.contains("s3cr3t") == false)
        let listError = SyncError.checksums(
            url: "https://h/SUMS?token=s3cr3t", error: TransferError(code: .connect, message: "refused"))
        #expect(listError.errorDescription?.contains("s3cr3t") == false)
    }

    @Test func plannedItemsShowNoQuerySecret() throws {
        let manifest = try Manifest.parse(
            "version: 1\ndefaults: {redact: [token]}\nitems:\n  - url: https://h/f.bin?token=s3cr3t\n", name: "m.yaml")
        let item = try #require(Plan(manifest: manifest).items.first)
        #expect(item.displayURL == "https://h/f.bin?token=***")
        #expect(
            item.redactor.redact("cannot connect to https://h/f.bin?token=s3cr3t")
                == "cannot connect to https://h/f.bin?token=***")
    }
}

/// Every output of a run that fails on a URL with a secret query parameter.
@Suite struct QueryRedactionOutputTests {
    let server: TestServer
    init() throws { server = try TestServer() }

    @Test func noOutputShowsTheSecret() async throws {
        let body = TestServer.bytes(count: 3000, seed: 5)
        server.set("/ok.bin", TestServer.Route(body: body))
        var moved = TestServer.Route(body: [])
        // A redirect to a URL with another secret of the same name, which then fails.
        moved.redirect = server.url("/gone.bin?token=REDIRECTSECRET&part=2")
        server.set("/moved.bin", moved)
        try await withTestDirectory { dir in
            let out = outputs(beside: dir)
            let yaml = """
                version: 1
                defaults:
                  redact: [token, X-Key]
                  headers: {X-Key: HEADERSECRET}
                  retries: 0
                items:
                  - url: \(server.url("/ok.bin?token=FIRSTSECRET"))
                    dest: ok.bin
                  - url: \(server.url("/moved.bin?token=SECONDSECRET"))
                    dest: moved.bin
                  - url: \(server.url("/missing.bin?token=THIRDSECRET"))
                    dest: missing.bin
                    mirrors: [\(server.url("/missing2.bin?Token=MIRRORSECRET"))]
                """
            let path = write(yaml, to: "m.yaml", in: dir)
            let secrets = ["FIRSTSECRET", "SECONDSECRET", "THIRDSECRET", "REDIRECTSECRET", "MIRRORSECRET", "HEADERSECRET"]
            func expectClean(_ text: String, _ what: String) {
                for secret in secrets { #expect(!text.contains(secret), "\(what) shows \(secret): \(text)") }
            }

            let plan = try await execute(["plan", path])
            #expect(plan.status == 0, "\(plan.stderr)")
            #expect(plan.stdout.contains("token=***"), "\(plan.stdout)")
            expectClean(plan.stdout + plan.stderr, "plan")

            let run = try await execute([
                "sync", path, "--verbose", "--progress", "lines", "--report", out + "/r.json", "--junit", out + "/j.xml",
                "--events", out + "/e.jsonl", "--metrics", out + "/m.prom",
            ])
            #expect(run.status == 1, "\(run.stderr)")
            expectClean(run.stdout + run.stderr, "stderr")
            #expect(run.stderr.contains("http_404"), "\(run.stderr)")
            let report = try String(contentsOfFile: out + "/r.json", encoding: .utf8)
            expectClean(report, "report")
            #expect(report.contains("token=***"))
            let junit = try String(contentsOfFile: out + "/j.xml", encoding: .utf8)
            expectClean(junit, "JUnit")
            #expect(junit.contains("token=***"))
            expectClean(try String(contentsOfFile: out + "/e.jsonl", encoding: .utf8), "events")
            expectClean(try String(contentsOfFile: out + "/m.prom", encoding: .utf8), "metrics")
            // The item with a secret in its URL was still fetched with it.
            #expect(fileSHA(dir + "/ok.bin") == sha(body))
        }
    }
}
