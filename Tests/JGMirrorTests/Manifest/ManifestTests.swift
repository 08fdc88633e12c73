import Foundation
import JGMirror
import Testing

@Suite struct ManifestTests {
    @Test func parsesDefaultsUnitsAndFolderDestinations() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            root: mirror
            defaults:
              connections: 6
              min_segment: 2MiB
              timeout: 1500ms
              headers: {User-Agent: test/1}
              tags: [nightly]
            items:
              - url: https://example.org/releases/os.iso
                dest: isos/
                sha256: 9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08
                size: 4GiB
                connections: 8
                tag: 7
              - url: https://example.org/a%20b.txt
            """, name: "m.yaml")
        #expect(manifest.items.count == 2)
        #expect(manifest.items[0].dest == "isos/os.iso")
        #expect(manifest.items[0].sha256 == "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        #expect(manifest.items[0].size == 4 << 30)
        #expect(manifest.items[1].dest == "a b.txt")
        let plan = Plan(manifest: manifest)
        #expect(plan.items[0].connections == 8)
        #expect(plan.items[1].connections == 6)
        #expect(plan.items[1].options.retries == 3)
        #expect(plan.items[1].options.minSegment == 2 << 20)
        #expect(plan.items[1].options.timeout == 1.5)
        #expect(plan.items[1].tags == ["nightly"])
        #expect(plan.items[0].options.headers == [HTTPHeader(name: "User-Agent", value: "test/1")])
    }

    /// Every class of manifest error names the file, line and column.
    @Test(arguments: [
        (
            "version: 1\nitems:\n  - url: http://h/a\n    conections: 3\n",
            "m.yaml:4:5: unknown key 'conections' in an item (did you mean 'connections'?)"
        ),
        ("version: 1\nitems:\n  - url: http://h/a\n    sha256: abc\n", "m.yaml:4:13: 'sha256' must be 64 hexadecimal digits"),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: x\n  - url: http://h/b\n    dest: x\n",
            "m.yaml:6:11: destination 'x' is already used by the item at line 4"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: /etc/passwd\n",
            "m.yaml:4:11: destination '/etc/passwd' is absolute"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: ~x/y\n",
            "m.yaml:4:11: destination '~x/y' starts with '~', which jgmirror does not expand"
        ),
        ("version: 1\nitems:\n  - url: http://h/a\n    dest: ../x\n", "m.yaml:4:11: destination '../x' leaves the root"),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: a/../../x\n",
            "m.yaml:4:11: destination 'a/../../x' leaves the root"
        ),
        ("version: 1\nitems:\n  - url: ftp://h/a\n", "m.yaml:3:10: unsupported URL scheme 'ftp'"),
        ("version: 1\nitems:\n  - url: http://user@/a\n", "m.yaml:3:10: URL 'http://***@/a' has no host"),
        ("version: 1\nitems:\n  - url: https:///a\n", "m.yaml:3:10: URL 'https:///a' has no host"),
        ("version: 1\nitems:\n  - url: example.org/a\n", "m.yaml:3:10: 'example.org/a' is not an absolute URL"),
        (
            "version: 1\nitems:\n  - url: file:///etc/passwd\n",
            "m.yaml:3:10: file:// URLs are refused unless --allow-file-urls is given"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    connections: many\n",
            "m.yaml:4:18: 'connections' must be a whole number from 1 to 64, not 'many'"
        ),
        ("version: 1\nitems:\n  - url: http://h/a\n    size: huge\n", "m.yaml:4:11: 'size' must be a size"),
        // Past 1 EiB byte arithmetic would overflow: refused, never a crash.
        (
            "version: 1\nitems:\n  - url: http://h/a\n    size: 9223372036854775807\n",
            "m.yaml:4:11: 'size' must be at most 1EiB, not '9223372036854775807'"
        ),
        (
            "version: 1\ndefaults: {min_segment: 9000000000000000000}\nitems:\n  - url: http://h/a\n",
            "m.yaml:2:25: 'min_segment' must be at most 1EiB"
        ),
        ("version: 1\nitems:\n  - url: [http://h/a]\n", "m.yaml:3:10: 'url' expects a string, found a list"),
        ("version: 1\nitems:\n  - url: http://h/a\n   dest: x\n", "m.yaml:4:"),
        ("items: []\n", "m.yaml:1:1: missing required key 'version'"),
        ("version: 2\nitems: []\n", "m.yaml:1:10: unsupported manifest version 2"),
        ("version: 1\nitems:\n  - dest: x\n", "m.yaml:3:5: item has no 'url'"),
        ("version: 1\nitems:\n  - url: http://h/a\n    url: http://h/b\n", "m.yaml:4:5: key 'url' appears twice in an item"),
        ("version: 1\nversion: 1\nitems: []\n", "m.yaml:2:1: key 'version' appears twice in the manifest"),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    sha256: \(String(repeating: "a", count: 64))\n    sha512: \(String(repeating: "b", count: 128))\n",
            "m.yaml:5:13: give 'sha256' or 'sha512', not both"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    sha512: \(String(repeating: "b", count: 128))\n    sha256: \(String(repeating: "a", count: 64))\n",
            "m.yaml:5:13: give 'sha256' or 'sha512', not both"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    sha512: \(String(repeating: "b", count: 5000))\n",
            "m.yaml:4:13: 'sha512' must be 128 hexadecimal digits, got 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    sha256: \(String(repeating: "a", count: 63))g\n",
            "m.yaml:4:13: 'sha256' must be 64 hexadecimal digits"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: x.jgpart\n",
            "m.yaml:4:11: destination 'x.jgpart' uses a name jgmirror reserves"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: d\n  - url: http://h/b\n    dest: d/x\n",
            "m.yaml:6:11: destination 'd/x' lies inside 'd'"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    headers: {A: \"c\\r\\nInjected: 1\"}\n",
            "m.yaml:4:18: the value of header 'A' contains a line break or control character"
        ),
        ("version: 1\nitems:\n  - url: http://h/a\n    headers: {\"A B\": c}\n", "m.yaml:4:15: 'A B' is not a valid header name"),
    ])
    func errorsNameFileLineAndColumn(yaml: String, expected: String) {
        #expect(throws: ManifestError.self) { try Manifest.parse(yaml, name: "m.yaml") }
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
        } catch {
            #expect(error.errorDescription?.hasPrefix(expected) == true, "got: \(error.errorDescription ?? "")")
        }
    }

    /// `~` is refused where the manifest writes it, not in a file name taken from a URL.
    @Test func aTildeFromTheURLIsAFileName() throws {
        let manifest = try Manifest.parse("version: 1\nitems:\n  - url: http://h/~foo.tar\n", name: "m.yaml")
        #expect(manifest.items.first?.dest == "~foo.tar")
    }

    /// A checksum of the wrong length is quoted shortened, whichever digest it is.
    @Test(arguments: ["sha256", "sha512"])
    func aLongChecksumIsQuotedShortened(key: String) {
        let yaml = "version: 1\nitems:\n  - url: http://h/a\n    \(key): \(String(repeating: "b", count: 100_000))\n"
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
            Issue.record("accepted")
        } catch {
            let line = error.errorDescription ?? ""
            #expect(line.utf8.count < 300 && line.contains("(100000 bytes)"), "\(line.prefix(400))")
        }
    }

    /// A destination that cannot be normalised is found while its item is parsed, yet
    /// reported where the checks across items stand: after any error in the rest of
    /// the document, and after an earlier item's clash.
    @Test(arguments: [
        ("version: 1\nitems:\n  - url: http://h/a\n    dest: ../x\nroot: \"\"\n", "m.yaml:5:7: 'root' must not be empty"),
        ("items:\n  - url: http://h/a\n    dest: /x\n", "m.yaml:1:1: missing required key 'version'"),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: d\n  - url: http://h/b\n    dest: d\n  - url: http://h/c\n    dest: ../x\n",
            "m.yaml:6:11: destination 'd' is already used by the item at line 4"
        ),
        (
            "version: 1\nitems:\n  - url: http://h/a\n    dest: ../x\n  - url: http://h/b\n    dest: d\n  - url: http://h/c\n    dest: d\n",
            "m.yaml:4:11: destination '../x' leaves the root"
        ),
    ])
    func destinationErrorsKeepTheirPlaceAmongOthers(yaml: String, expected: String) {
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.errorDescription?.hasPrefix(expected) == true, "got: \(error.errorDescription ?? "")")
        }
    }

    /// The lists `checksums:`, `sets:` and `items:` refuse an element of the wrong
    /// shape where it stands.
    @Test(arguments: [
        ("version: 1\nitems:\n  - http://h/a\n", "m.yaml:3:5: each item is a mapping with at least 'url', found a scalar"),
        ("version: 1\nitems:\n  - [http://h/a]\n", "m.yaml:3:5: each item is a mapping with at least 'url', found a list"),
        ("version: 1\nitems: {url: http://h/a}\n", "m.yaml:2:8: 'items' expects a list, found a mapping"),
        (
            "version: 1\nsets:\n  - http://h/SHA256SUMS\n",
            "m.yaml:3:5: each set is a mapping with 'sums' or 'apt', found a scalar"
        ),
        ("version: 1\nsets:\n  - dest: x/\n", "m.yaml:3:5: set has no 'sums' (the URL of its checksums list)"),
        ("version: 1\nsets: http://h/SHA256SUMS\n", "m.yaml:2:7: 'sets' expects a list, found a scalar"),
        (
            "version: 1\nchecksums:\n  - [http://h/SUMS]\nitems: []\n",
            "m.yaml:3:5: each 'checksums' entry is a URL or a mapping with 'url', found a list"
        ),
        ("version: 1\nchecksums:\n  - keyring: k\nitems: []\n", "m.yaml:3:5: a checksums entry needs 'url'"),
        ("version: 1\nchecksums:\n  - ftp://h/SUMS\nitems: []\n", "m.yaml:3:5: unsupported URL scheme 'ftp'"),
    ])
    func listElementsOfTheWrongShapeAreRefusedWhereTheyStand(yaml: String, expected: String) {
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
            Issue.record("accepted: \(yaml)")
        } catch {
            #expect(error.errorDescription?.hasPrefix(expected) == true, "got: \(error.errorDescription ?? "")")
        }
    }

    @Test func checksumsTakeURLsAndMappingsSideBySide() throws {
        let manifest = try Manifest.parse(
            "version: 1\nchecksums:\n  - http://h/A\n  - url: http://h/B\n  - http://h/C\nitems: []\n", name: "m.yaml")
        #expect(manifest.checksums.map(\.url) == ["http://h/A", "http://h/B", "http://h/C"])
        #expect(manifest.checksums.map(\.location.line) == [3, 4, 5])
    }

    @Test func requireChecksumsRefusesItemsWithout() {
        let yaml = "version: 1\nitems:\n  - url: http://h/a\n"
        #expect(throws: ManifestError.self) {
            try Manifest.parse(yaml, name: "m.yaml", options: ManifestOptions(requireChecksums: true))
        }
        #expect(throws: Never.self) { try Manifest.parse(yaml, name: "m.yaml") }
    }

    @Test func expandsEnvironmentVariables() throws {
        var options = ManifestOptions()
        options.environment = ["ORIGIN": "http://127.0.0.1:9"]
        let manifest = try Manifest.parse("version: 1\nitems:\n  - url: ${ORIGIN}/a\n", name: "m.yaml", options: options)
        #expect(manifest.items[0].url == "http://127.0.0.1:9/a")
        options.environment = [:]
        #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nitems:\n  - url: ${ORIGIN}/a\n", name: "m.yaml", options: options)
        }
    }

    @Test func unitsParse() {
        #expect(Units.parseSize("1MiB") == 1_048_576)
        let twentyM: Int64? = 20_971_520
        #expect(Units.parseSize("20M") == twentyM)
        #expect(Units.parseSize("2GB") == 2_000_000_000)
        #expect(Units.parseSize("12") == 12)
        #expect(Units.parseSize("x") == nil)
        #expect(Units.parseDuration("250ms") == 0.25)
        #expect(Units.parseDuration("2m") == 120)
        #expect(Units.parseDuration("-1s") == nil)
    }

    @Test func redactsCredentialsAndHeaderValues() {
        #expect(Redactor.redactURL("https://user:pw@host/x") == "https://***@host/x")
        let redactor = Redactor(headers: [HTTPHeader(name: "Authorization", value: "Bearer s3cret")], redact: ["authorization"])
        #expect(redactor.redact("failed with Bearer s3cret at http://a:b@h/") == "failed with *** at http://***@h/")
    }
}

@Suite struct PlanTests {
    static let yaml = """
        version: 1
        defaults: {tags: [nightly]}
        items:
        """ + (0..<30).map { "\n  - url: http://h/f\($0)\n    tags: [\($0 % 3 == 0 ? "iso" : "doc")]" }.joined()

    @Test func tagFilters() throws {
        let manifest = try Manifest.parse(Self.yaml, name: "m.yaml")
        var options = PlanOptions()
        options.tags = ["iso"]
        #expect(Plan(manifest: manifest, options: options).items.count == 10)
        options.tags = []
        options.skipTags = ["iso"]
        #expect(Plan(manifest: manifest, options: options).items.count == 20)
    }

    @Test func shardsAreDisjointAndComplete() throws {
        let manifest = try Manifest.parse(Self.yaml, name: "m.yaml")
        var seen: [String] = []
        for index in 0..<3 {
            var options = PlanOptions()
            options.shard = try Shard(index: index, count: 3)
            seen += Plan(manifest: manifest, options: options).items.map(\.dest)
        }
        #expect(seen.count == 30)
        #expect(Set(seen).count == 30)
        #expect(try Shard.automatic(count: 3, environment: ["JOB_COMPLETION_INDEX": "2"]) == Shard(index: 2, count: 3))
        #expect(try Shard.automatic(count: 4, environment: ["SLURM_ARRAY_TASK_ID": "1"]) == Shard(index: 1, count: 4))
        #expect(throws: UsageError.self) { try Shard(parsing: "3/3") }
    }

    @Test func overridesApply() throws {
        let manifest = try Manifest.parse(Self.yaml, name: "m.yaml")
        var options = PlanOptions()
        options.connections = 2
        options.retries = 9
        let item = Plan(manifest: manifest, options: options).items[0]
        #expect(item.connections == 2)
        #expect(item.options.retries == 9)
    }
}
