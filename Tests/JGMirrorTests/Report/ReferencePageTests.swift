import Foundation
import Testing

@testable import JGMirror

/// The option table (`Rules.table`) and the pages made from it: the manifest's key
/// reference and the exit and error codes in docs/, and the manifest summary of
/// `--help` (docs/manifest.md#top-level-keys).
@Suite struct ReferencePageTests {
    /// The package's root, from this file's place in it.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Every generated section of `page`, by name, as committed.
    private func sections(of page: String) throws -> [String: String] {
        let text = try String(contentsOf: Self.root.appendingPathComponent(page), encoding: .utf8)
        var found: [String: String] = [:]
        var rest = Substring(text)
        while let begin = rest.range(of: "<!-- BEGIN GENERATED ") {
            let nameEnd = rest[begin.upperBound...].firstIndex(where: { $0 == " " || $0 == ":" }) ?? rest.endIndex
            let name = String(rest[begin.upperBound..<nameEnd])
            guard let open = rest[begin.upperBound...].range(of: "-->\n"),
                let end = rest[open.upperBound...].range(of: "<!-- END GENERATED \(name) -->")
            else { break }
            found[name] = String(rest[open.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// A help text or table that says what the code does not is worse than none:
    /// `scripts/docs.sh` rewrites these sections, and this fails until it has run.
    @Test(arguments: ["docs/manifest.md", "docs/exit-codes.md"])
    func committedSectionsAreWhatTheTablesSay(page: String) throws {
        let committed = try sections(of: page)
        #expect(!committed.isEmpty, "\(page) has no generated section")
        for (name, body) in committed {
            let current = try #require(ReferencePage.section(name), "\(page): unknown section \(name)")
            #expect(body == current, "\(page): section \(name) is stale; run scripts/docs.sh")
        }
    }

    @Test func everyReferenceSectionIsOnAPage() throws {
        let pages = try sections(of: "docs/manifest.md").merging(sections(of: "docs/exit-codes.md")) { $1 }
        #expect(Set(pages.keys) == Set(ReferencePage.sections))
    }

    /// Each row says what a reference needs: a type, a default, a help; and no key is
    /// given twice for one place, where the parser would take the first.
    @Test func everyRowIsComplete() {
        for row in Rules.table {
            #expect(!row.type.isEmpty && !row.defaultText.isEmpty && !row.help.isEmpty, "\(row.name)")
            #expect(row.key != nil || !row.flags.isEmpty || row.label != nil, "a row without a name: \(row.help)")
            #expect(!row.help.hasSuffix("."), "\(row.name): the page adds the full stop")
        }
        for place in OptionRow.Place.allCases {
            let keys = Rules.keys(in: place)
            #expect(Set(keys).count == keys.count, "\(place): \(keys)")
        }
    }

    /// The parser allows exactly the table's keys: one that only the table knows is
    /// refused as unknown (here: the host options outside `defaults` and `hosts:`).
    @Test func theParserTakesItsKeysFromTheTable() throws {
        #expect(ManifestParser.setKeys.contains("keep") && ManifestParser.defaultsKeys.contains("min_rate"))
        #expect(throws: ManifestError.self) {
            try Manifest.parse("version: 1\nitems:\n  - url: http://h/a\n    host_grace: 1s\n", name: "m.yaml")
        }
        let manifest = try Manifest.parse(
            "version: 1\nsets:\n  - sums: http://h/SHA256SUMS\n    dest: rel/\n    publish: snapshot\n    keep: 4\n",
            name: "m.yaml")
        #expect(manifest.sets.first?.keep == 4)
    }

    /// `--help` names every key a manifest may have, `publish` and `keep` of a set
    /// among them (a summary written by hand left them out).
    @Test func helpSummaryNamesEveryKey() async throws {
        let help = try await execute(["--help"])
        #expect(help.status == 0)
        let summary = help.stdout.replacingOccurrences(of: "\n", with: " ")
        guard let start = summary.range(of: "MANIFEST (version 1):"),
            let end = summary[start.upperBound...].range(of: "Every mistake")
        else {
            Issue.record("no manifest summary in --help")
            return
        }
        let paragraph = String(summary[start.lowerBound..<end.lowerBound])
        let missing = Set(Rules.table.compactMap(\.key)).subtracting(["version"]).filter { !paragraph.contains($0) }
        #expect(missing.isEmpty, "--help's manifest summary does not name \(missing.sorted())")
        #expect(paragraph.contains("publish, keep"), "\(paragraph)")
    }

    /// The options' help reads bounds and defaults from the table.
    @Test func optionHelpReadsTheTable() async throws {
        /// The help of `command`, its lines joined.
        func help(_ command: String) async throws -> String {
            try await execute([command, "--help"]).stdout.replacingOccurrences(
                of: "\\s+", with: " ", options: .regularExpression)
        }
        let sync = try await help("sync")
        #expect(sync.contains("(\(Rules.jobs.rangeText))"))
        #expect(sync.contains("(\(Rules.maxPerHost.rangeText))"), "--max-per-host shows no bounds")
        #expect(sync.contains("default \(Rules.maxDeleteCount.defaultText) and \(Rules.maxDeleteShare.row.defaultText)"))
        #expect(try await help("get").contains(Rules.minSegment.rangeText), "get --min-segment shows no bounds")
    }

    @Test func anUnknownSectionIsAUsageError() async throws {
        let run = try await execute(["--generate-reference", "nothing"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--generate-reference takes one of bounds,"), "\(run.stderr)")
    }
}
