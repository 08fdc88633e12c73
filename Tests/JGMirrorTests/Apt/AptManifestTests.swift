import Foundation
import Testing

@testable import JGMirror

/// An `apt:` set's keys (docs/manifest.md#sets): each mistake is one line naming the
/// file, line and column, exit 2, before anything is fetched.
@Suite struct AptManifestTests {
    /// A manifest of one set whose mapping holds `lines` (each indented under it).
    private func parse(_ lines: [String], keyring: String) throws -> Manifest {
        let set = lines.map { $0.replacingOccurrences(of: "KEYRING", with: keyring) }
        let text = "version: 1\nsets:\n  - " + set.joined(separator: "\n    ") + "\n"
        return try Manifest.parse(text, name: "m.yaml")
    }

    static let valid = [
        "apt: https://deb.example.org/debian", "suites: [bookworm, bookworm-updates]", "components: [main, contrib]",
        "architectures: [amd64]", "keyring: KEYRING", "dest: debian/",
    ]

    @Test func aCompleteAptSetParses() async throws {
        try await withTestDirectory { dir in
            let keyring = write("keys", to: "k.gpg", in: dir)
            let manifest = try parse(Self.valid + ["sources: true", "connections: 4", "keep_removed: 2d"], keyring: keyring)
            let set = try #require(manifest.sets.first)
            #expect(set.kind == "apt" && set.source == "https://deb.example.org/debian/" && set.keyring == keyring)
            #expect(set.settings.connections == 4 && set.keepRemoved == 172_800 && set.dest == "debian/")
            let apt = try #require(set.catalog as? AptCatalog)
            #expect(apt.suites == ["bookworm", "bookworm-updates"] && apt.sources && apt.architectures == ["amd64"])
        }
    }

    @Test(arguments: [
        (
            ["suites: [bookworm]", "components: [main]", "architectures: [amd64]", "keyring: KEYRING"],
            "m.yaml:3:5: set has no 'apt' (the base URL of its apt repository, the folder that holds dists/ and pool/)"
        ),
        (
            Array(valid.filter { !$0.hasPrefix("keyring") }),
            "m.yaml:3:5: an apt set needs 'keyring': the archive's keys, which must sign its Release"
        ),
        (Array(valid.filter { !$0.hasPrefix("suites") }), "m.yaml:3:5: an apt set needs 'suites' (a list of at least one)"),
        (
            valid.map { $0.hasPrefix("architectures") ? "architectures: [amd64, source]" : $0 },
            "m.yaml:6:28: 'source' is not an architecture; 'sources: true' mirrors the sources"
        ),
        (
            valid.map { $0.hasPrefix("suites") ? "suites: [../etc]" : $0 },
            "m.yaml:4:14: 'suites' entry '../etc' has a '..' segment; it must name its file directly"
        ),
        (
            valid + ["sums: https://h/SHA256SUMS"],
            "m.yaml:9:5: 'sums' is a key of 'sums' sets, and this is a 'apt' set ('apt' at line 3)"
        ),
        (
            valid + ["publish: false"],
            "m.yaml:9:5: an apt set always places its indexes after its pool; 'publish' takes true or snapshot (snapshots of its own)"
        ),
        (
            valid.map { $0.hasPrefix("apt") ? "apt: https://deb.example.org/debian?x=1" : $0 },
            "m.yaml:3:10: 'apt' is the repository's base folder; a query or fragment names no folder"
        ),
        (valid + ["suite: [x]"], "m.yaml:9:5: unknown key 'suite' in a set (did you mean 'suites'?)"),
    ])
    func aMistakeNamesItsPlace(lines: [String], expected: String) async {
        await withTestDirectory { dir in
            let keyring = write("keys", to: "k.gpg", in: dir)
            do {
                _ = try parse(lines, keyring: keyring)
                Issue.record("no error for \(lines)")
            } catch {
                #expect(error.localizedDescription == expected)
            }
        }
    }

    /// Through the binary: exit 2, the one line, nothing fetched.
    @Test func theBinaryRefusesAnAptSetWithoutAKeyring() async throws {
        try await withTestDirectory { dir in
            let text =
                "version: 1\nsets:\n  - {apt: http://127.0.0.1:9/debian, suites: [s], components: [main], architectures: [amd64]}\n"
            let path = write(text, to: "m.yaml", in: dir)
            let run = try await execute(["sync", path, "--progress", "none"])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains("\(path):3:5: an apt set needs 'keyring'"), "\(run.stderr)")
        }
    }
}
