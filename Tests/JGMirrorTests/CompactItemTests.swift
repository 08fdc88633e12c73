import Foundation
import Testing

@testable import JGMirror

/// How manifests and plans store their items compactly (issue 16): the public
/// properties read back exactly what was parsed or set.
@Suite struct CompactItemTests {
    static let testDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    @Test func packedChecksumsSpellTheSameHexAgain() {
        // Every nibble value in every position of each of the four words.
        let samples = [
            Self.testDigest, String(repeating: "0", count: 64), String(repeating: "f", count: 64),
            "0123456789abcdef" + "fedcba9876543210" + "00112233445566778899aabbccddeeff",
        ] + (0..<50).map { _ in (0..<64).map { _ in String("0123456789abcdef".randomElement()!) }.joined() }
        for hex in samples {
            let packed = PackedSHA256(hex)
            #expect(packed.isPacked)
            #expect(packed.text == hex)
            #expect(packed.matches(hex))
            #expect(packed == PackedSHA256(hex))
        }
        #expect(PackedSHA256(Self.testDigest) != PackedSHA256(String(repeating: "0", count: 64)))
        #expect(!PackedSHA256(Self.testDigest).matches(Self.testDigest.uppercased()))
    }

    @Test func otherTextIsKeptAsGiven() {
        for text in [Self.testDigest.uppercased(), "abc", "", Self.testDigest + "0", String(Self.testDigest.dropLast()) + "g"] {
            let packed = PackedSHA256(text)
            #expect(!packed.isPacked)
            #expect(packed.text == text)
            #expect(packed.matches(text))
        }
    }

    @Test func itemsReadBackTheirChecksums() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            items:
              - url: http://127.0.0.1:9/a
                sha256: \(Self.testDigest.uppercased())
              - url: http://127.0.0.1:9/b
                sha256: \(Self.testDigest)
              - url: http://127.0.0.1:9/c
            """, name: "m.yaml")
        #expect(manifest.items.map(\.sha256) == [Self.testDigest, Self.testDigest, nil])
        #expect(manifest.items[0].packedSHA256?.isPacked == true)
        var plan = Plan(manifest: manifest)
        #expect(plan.items.map(\.sha256) == [Self.testDigest, Self.testDigest, nil])
        #expect(plan.items.map(\.hasChecksum) == [true, true, false])
        plan.items[2].sha256 = "not hex"
        #expect(plan.items[2].sha256 == "not hex")
        plan.items[1].sha256 = nil
        #expect(plan.items[1].sha256 == nil)
        #expect(!plan.items[1].hasChecksum)
    }

    /// A sync's report keeps its results as rows and builds them when read: what it
    /// reads back, counts, exits with and writes is what a report of the same results,
    /// built whole, does.
    @Test func compactReportsReadAsTheirResults() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            defaults: {tags: [nightly]}
            items:
              - url: http://user:secret@127.0.0.1:9/a
                sha256: \(Self.testDigest)
                tag: 4
              - url: http://127.0.0.1:9/b
              - url: http://127.0.0.1:9/c
                sha512: \(String(repeating: "ab", count: 64))
              - url: http://127.0.0.1:9/d
                sha256: \(Self.testDigest)
            """, name: "m.yaml")
        let items = Plan(manifest: manifest).items
        func base(_ item: PlannedItem, _ status: ItemStatus) -> ItemResult {
            ItemResult(
                dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status, connections: 1, attempts: 1,
                sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.insecure)
        }
        var downloaded = base(items[0], .downloaded)
        downloaded.bytes = 4
        downloaded.bytesDownloaded = 4
        downloaded.durationS = 0.25
        downloaded.sha256Actual = Self.testDigest
        var failed = base(items[1], .failed)
        failed.error = ItemError(code: .http(404), message: "HTTP 404")
        failed.note = "a note"
        var mismatch = base(items[2], .mismatch)
        mismatch.bytes = 3
        mismatch.sha512Actual = String(repeating: "cd", count: 64)
        mismatch.error = ItemError(code: .checksumMismatch, message: "SHA-512 differs")
        // Names that are not the planned item's: kept whole.
        var renamed = base(items[3], .unchanged)
        renamed.dest = "elsewhere"
        renamed.bytes = 9
        let deleted = ItemResult(dest: "old.bin", url: "", status: .deleted, bytes: 7)
        let results = [downloaded, failed, mismatch, renamed]
        var compact = ReportItems(rows: zip(results, items).map { ResultRow($0, of: $1) }, of: items)
        compact.extra = [deleted]
        let started = Date(timeIntervalSince1970: 1_700_000_000)
        let report = RunReport(command: "sync", manifest: "m.yaml", started: started, finished: started + 2, items: compact)
        let whole = RunReport(command: "sync", manifest: "m.yaml", started: started, finished: started + 2, items: results + [deleted])
        #expect(report.items == results + [deleted])
        #expect(report.itemCount == 5)
        #expect(report == whole)
        #expect(report.exitCode == whole.exitCode)
        #expect(report.exitCode == .transferFailed || report.exitCode == .integrity)
        #expect(report.totals == whole.totals)
        #expect(report.totals.failed == 1 && report.totals.mismatch == 1 && report.totals.deleted == 1 && report.totals.bytesDownloaded == 4)
        #expect(try report.jsonData() == whole.jsonData())
        #expect(try report.jsonData() == Data(whole.json.rendered().utf8))
        #expect(try RunReport.decode(report.jsonData()).items.count == 5)
        #expect(JUnitReport.xml(for: report) == JUnitReport.xml(for: whole))
        #expect(RunMetrics.bytesVerified(report) == RunMetrics.bytesVerified(whole))
        var replaced = report
        replaced.items = [deleted]
        #expect(replaced.items == [deleted])
        #expect(replaced.totals.items == 1)
        // An empty report renders its empty list as before.
        let empty = RunReport(command: "sync", manifest: nil, started: started, finished: started, items: [])
        #expect(try empty.jsonData() == Data(empty.json.rendered().utf8))
    }
}
