import Foundation
import TestServer
import Testing

@testable import JGMirror

/// Every number a manifest or the command line gives is bounded by the parser, and
/// every URL is parsed by libcurl's URL API at plan time (docs/manifest.md#values).
@Suite struct BoundsTests {
    private func manifestError(_ yaml: String) -> String? {
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
            return nil
        } catch { return error.errorDescription }
    }

    private func item(_ line: String) -> String { "version: 1\nitems:\n  - url: http://h/a\n    \(line)\n" }

    @Test(arguments: [
        ("timeout: 2562047788016h", "m.yaml:4:14: 'timeout' must be from 100ms to 24h"),
        ("timeout: 25h", "m.yaml:4:14: 'timeout' must be from 100ms to 24h"),
        ("timeout: 50ms", "m.yaml:4:14: 'timeout' must be from 100ms to 24h"),
        ("tag: 9007199254740992", "m.yaml:4:10: 'tag' must be a whole number from -9007199254740991 to 9007199254740991"),
        ("tag: -9223372036854775808", "m.yaml:4:10: 'tag' must be a whole number from"),
        ("size: 2EiB", "m.yaml:4:11: 'size' must be at most 1EiB"),
        ("max_size: 99999999999999999999", "m.yaml:4:15: 'max_size' must be a size"),
        ("min_segment: 1025PiB", "m.yaml:4:18: 'min_segment' must be at most 1EiB"),
        ("connections: 65", "m.yaml:4:18: 'connections' must be a whole number from 1 to 64"),
        ("retries: 101", "m.yaml:4:14: 'retries' must be a whole number from 0 to 100"),
    ])
    func outOfBoundValuesAreLocatedErrors(line: String, message: String) {
        let error = manifestError(item(line)) ?? "accepted"
        #expect(error.hasPrefix(message), "\(error)")
    }

    @Test func boundsThemselvesAreAccepted() throws {
        for line in ["timeout: 24h", "timeout: 100ms", "tag: 9007199254740991", "tag: -9007199254740991", "size: 1EiB"] {
            #expect(manifestError(item(line)) == nil, "\(line)")
        }
    }

    @Test(arguments: [
        ("url: 'http://[::1'", "m.yaml:3:10: URL 'http://[::1' cannot be used: Bad IPv6 address"),
        ("url: 'http://h:99999/x'", "m.yaml:3:10: URL 'http://h:99999/x' cannot be used: Port number"),
        ("url: 'http://a<b/x'", "m.yaml:3:10: URL 'http://a<b/x' cannot be used: Bad hostname"),
    ])
    func malformedURLsAreRefusedAtPlanTime(line: String, message: String) {
        let yaml = "version: 1\nitems:\n  - \(line)\n    dest: x\n"
        let error = manifestError(yaml) ?? "accepted"
        #expect(error.hasPrefix(message), "\(error)")
    }

    @Test func everyURLOfTheManifestIsParsed() {
        let bad = "'http://[::1'"
        let cases = [
            "version: 1\nitems:\n  - url: http://h/a\n    mirrors: [\(bad)]\n",
            "version: 1\nchecksums: [\(bad)]\nitems: []\n",
            "version: 1\nsets:\n  - sums: \(bad)\n",
            "version: 1\nsets:\n  - sums: http://h/SUMS\n    mirrors_base: [\(bad)]\n",
            "version: 1\nsets:\n  - sums: http://h/SUMS\n    signature: \(bad)\n    keyring: k.gpg\n",
        ]
        for yaml in cases {
            let error = manifestError(yaml) ?? "accepted"
            #expect(error.contains("Bad IPv6 address"), "\(yaml): \(error)")
        }
        // A credential in a refused URL is not repeated.
        let secret = manifestError("version: 1\nitems:\n  - url: 'http://user:pw@[::1/x?token=t'\n") ?? ""
        #expect(secret.contains("Bad IPv6") && !secret.contains("pw") && !secret.contains("token=t"), "\(secret)")
    }

    @Test func urlsSharingAnAuthorityAreStillCheckedOnTheirOwn() {
        let checker = CurlURL()
        #expect(checker.problem("http://h/a") == nil)
        #expect(checker.problem("http://h/b?c#d") == nil)
        #expect(checker.problem("http://h:0x/b") != nil)
        #expect(checker.problem("http://h/c") == nil)
    }

    @Test func aRedirectsLocationIsResolvedAsLibcurlDoes() {
        #expect(CurlURL.resolve("../z?b=1", against: "http://a.example/x/y?q") == "http://a.example/z?b=1")
        #expect(CurlURL.resolve("//other:81/p", against: "https://a.example/x") == "https://other:81/p")
        #expect(CurlURL.resolve("http://b/c", against: "http://a/") == "http://b/c")
        #expect(CurlURL.resolve("/a b/ü", against: "http://a/x") == "http://a/a%20b/%c3%bc")
    }

    @Test func theBinaryRefusesOutOfBoundValuesWithExit2() async throws {
        try await withTestDirectory { dir in
            let path = write(item("timeout: 2562047788016h"), to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("\(path):4:14: 'timeout' must be from 100ms to 24h"), "\(run.stderr)")
            let url = write("version: 1\nitems:\n  - url: 'http://[::1'\n    dest: x\n", to: "u.yaml", in: dir)
            let bad = try await execute(["sync", url, "--progress", "none"])
            #expect(bad.status == 2 && bad.stderr.contains("\(url):3:10: URL 'http://[::1' cannot be used"), "\(bad.stderr)")
            for (option, value) in [("--retry-delay", "2562047788016h"), ("--max-rate", "2EiB")] {
                let cli = try await execute(["sync", path, option, value, "--progress", "none"])
                #expect(cli.status == 2 && cli.stderr.contains(option), "\(option): \(cli.stderr)")
            }
            let get = try await execute(["get", "http://127.0.0.1:1/x", "-o", dir + "/x", "--timeout", "2562047788016h"])
            #expect(get.status == 2 && get.stderr.contains("--timeout must be from 100ms to 24h"), "\(get.stderr)")
        }
    }
}
