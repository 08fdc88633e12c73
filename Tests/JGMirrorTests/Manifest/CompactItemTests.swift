import Foundation
import Testing

@testable import JGMirror

/// How manifests and plans store their items compactly (issue 16): the public
/// properties read back exactly what was parsed or set.
@Suite struct CompactItemTests {
    static let testDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    @Test func packedChecksumsSpellTheSameHexAgain() {
        // Every nibble value in every position of each of the four words.
        let samples =
            [
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

    @Test func itemsPlannedTogetherShareOneTextArenaAndChangeAlone() throws {
        let manifest = try Manifest.parse(
            """
            version: 1
            items:
              - url: http://127.0.0.1:9/releases/first-file-with-a-long-name.tar.gz
                mirrors: [http://127.0.0.1:8/first.tar.gz]
                tag: 7
              - url: http://127.0.0.1:9/releases/second-file-with-a-long-name.tar.gz
                dest: sub/folder/second-file-with-a-long-name.tar.gz
              - url: http://127.0.0.1:9/é/third
                size: 12
            """, name: "m.yaml")
        var plan = Plan(manifest: manifest)
        let dests = ["first-file-with-a-long-name.tar.gz", "sub/folder/second-file-with-a-long-name.tar.gz", "third"]
        #expect(plan.items.map(\.dest) == dests)
        #expect(plan.items[2].url == "http://127.0.0.1:9/é/third" && plan.items[2].size == 12 && plan.items[1].size == nil)
        #expect(plan.items[0].mirrors == ["http://127.0.0.1:8/first.tar.gz"] && plan.items[0].tag == 7)
        #expect(plan.items[1].mirrors.isEmpty && plan.items[1].tag == nil && plan.items[1].sha512 == nil)
        let copy = plan.items[1]
        plan.items[1].url = "http://127.0.0.1:9/moved"
        plan.items[0].dest = "renamed"
        plan.items[0].mirrors = []
        plan.items[1].tag = 3
        plan.items[2].size = nil
        #expect(plan.items.map(\.dest) == ["renamed", dests[1], dests[2]])
        #expect(
            plan.items.map(\.url) == [
                "http://127.0.0.1:9/releases/first-file-with-a-long-name.tar.gz", "http://127.0.0.1:9/moved",
                "http://127.0.0.1:9/é/third",
            ])
        #expect(copy.url == "http://127.0.0.1:9/releases/second-file-with-a-long-name.tar.gz" && copy.dest == dests[1])
        #expect(plan.items[0].mirrors.isEmpty && plan.items[0].tag == 7 && plan.items[1].tag == 3 && plan.items[2].size == nil)
        // One item costs its 120 bytes plus its text; the text of a long URL lands in an
        // arena of its own.
        #expect(MemoryLayout<PlannedItem>.stride <= 120 && MemoryLayout<ManifestItem>.stride <= 128)
        let long = "http://127.0.0.1:9/" + String(repeating: "x", count: TextArena.Builder.capacity)
        plan.items[2].url = long
        #expect(plan.items[2].url == long && plan.items[2].dest == "third")
        var builder = TextArena.Builder()
        let texts = builder.texts(url: long, dest: "d")
        #expect(texts.url == long && texts.dest == "d" && builder.texts(url: "u", dest: "").url == "u")
        // A filtered plan keeps what it selected, in arenas of its own.
        var options = PlanOptions()
        options.shard = try Shard(index: 0, count: 1)
        let filtered = Plan(manifest: manifest, options: options)
        #expect(filtered.items.map(\.dest) == dests && filtered.items.map(\.url) == Plan(manifest: manifest).items.map(\.url))
    }

    @Test func destinationsWhoseHashesCollideAreStillToldApart() {
        let dests = ["a", "b", "c/d"]
        let items = ManifestItemChunks(
            dests.enumerated().map { index, dest in
                let line = SourceLocation(line: index + 1, column: 1)
                return ManifestItem(
                    url: "http://127.0.0.1:9/\(dest)", dest: dest, location: line, urlLocation: line, destLocation: line)
            })
        var index = DestinationIndex(capacity: 3) { _ in 42 }  // every destination collides
        for (position, dest) in dests.enumerated() {
            #expect(index.location(of: dest, in: items) == nil)
            index.insert(dest, at: position, of: items)
        }
        #expect(dests.map { index.location(of: $0, in: items)?.line } == [1, 2, 3])
        #expect(index.location(of: "c", in: items) == nil && index.location(of: "e", in: items) == nil)
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
                dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status, connections: 1,
                attempts: 1,
                sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.options.insecure)
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
        let report = RunReport(command: .sync, manifest: "m.yaml", started: started, finished: started + 2, items: compact)
        let whole = RunReport(
            command: .sync, manifest: "m.yaml", started: started, finished: started + 2, items: results + [deleted])
        #expect(report.items == results + [deleted])
        #expect(report.itemCount == 5)
        #expect(report == whole)
        #expect(report.exitCode == whole.exitCode)
        #expect(report.exitCode == .transferFailed || report.exitCode == .integrity)
        #expect(report.totals == whole.totals)
        #expect(
            report.totals.failed == 1 && report.totals.mismatch == 1 && report.totals.deleted == 1
                && report.totals.bytesDownloaded == 4)
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
        let empty = RunReport(command: .sync, manifest: nil, started: started, finished: started, items: [])
        #expect(try empty.jsonData() == Data(empty.json.rendered().utf8))
    }

    /// A large report, JSON or JUnit, is handed out in pieces of about 64 KiB, which
    /// together are the whole document.
    @Test func aLargeReportIsWrittenInPiecesThatMakeTheWholeDocument() throws {
        let started = Date(timeIntervalSince1970: 1_700_000_000)
        let results = (0..<3000).map { index in
            ItemResult(
                dest: "folder/file\(index).bin", url: "http://h/file\(index).bin", status: .downloaded, bytes: Int64(index))
        }
        let report = RunReport(command: .sync, manifest: "m.yaml", started: started, finished: started + 1, items: results)
        var pieces: [String] = []
        report.writeJSON { pieces.append($0) }
        #expect(pieces.count > 3 && pieces.dropLast().allSatisfy { $0.utf8.count >= 64 << 10 && $0.utf8.count < 66 << 10 })
        #expect(Data(pieces.joined().utf8) == Data(report.json.rendered().utf8))
        #expect(try RunReport.decode(Data(pieces.joined().utf8)).items.count == 3000)
        var xmlPieces: [String] = []
        JUnitReport.write(report, to: { xmlPieces.append($0) })
        #expect(xmlPieces.count > 3 && xmlPieces.dropLast().allSatisfy { $0.utf8.count >= 64 << 10 && $0.utf8.count < 66 << 10 })
        let xml = xmlPieces.joined()
        #expect(
            xml.hasPrefix(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"jgmirror sync\" tests=\"3000\""))
        #expect(xml.hasSuffix("    </testcase>\n  </testsuite>\n</testsuites>\n"))
        #expect(
            xml.components(separatedBy: "<testcase ").count == 3001 && xml.components(separatedBy: "</testcase>").count == 3001)
        #expect(xml.contains("name=\"folder/file2999.bin\""))
    }

    /// A plan resolves a manifest's items chunk by chunk, freeing each: across chunk
    /// boundaries it keeps their order and manifest positions, filtered or not.
    @Test func plansFromChunkedItemsKeepOrderAndPositions() throws {
        let count = ManifestItemChunks.chunkSize * 2 + 3
        var manifest = try Manifest.parse("version: 1\nitems:\n  - url: http://127.0.0.1:9/seed\n", name: "m.yaml")
        let seed = manifest.items[0]
        let items = (0..<count).map { index in
            var item = seed
            item.url = "http://127.0.0.1:9/f\(index)"
            item.dest = "d\(index % 7)/f\(index)"
            item.sha256 = index % 2 == 0 ? Self.testDigest : nil
            item.settings.tags = [index % 3 == 0 ? "a" : "b"]
            return item
        }
        manifest.items = items
        #expect(manifest.items.map(\.url) == items.map(\.url))
        #expect(manifest.itemChunks.count == count)
        let plan = Plan(manifest: manifest)
        #expect(plan.totalInManifest == count)
        #expect(plan.items.map(\.id) == Array(0..<count))
        #expect(plan.items.map(\.url) == items.map(\.url))
        #expect(plan.items.map(\.dest) == items.map { $0.dest ?? "" })
        #expect(plan.items.map(\.sha256) == items.map(\.sha256))
        #expect(plan.items.map(\.tags) == items.map { $0.settings.tags ?? [] })
        var options = PlanOptions()
        options.tags = ["a"]
        let filtered = Plan(manifest: manifest, options: options)
        let selected = Array(stride(from: 0, to: count, by: 3))
        #expect(filtered.totalInManifest == count)
        #expect(filtered.items.map(\.id) == selected)
        #expect(filtered.items.map(\.url) == selected.map { items[$0].url })
    }

    /// The parser's checks across all items reach across chunks: a destination taken
    /// by the first item and again after the first chunk is refused, naming the line.
    @Test func destinationsCollideAcrossChunks() throws {
        var yaml = "version: 1\nitems:\n"
        for index in 0..<(ManifestItemChunks.chunkSize + 5) {
            yaml +=
                "  - {url: \"http://127.0.0.1:9/f\(index)\", dest: \"d/f\(index == ManifestItemChunks.chunkSize + 2 ? 0 : index)\"}\n"
        }
        #expect(throws: ManifestError.self) { try Manifest.parse(yaml, name: "m.yaml") }
        do {
            _ = try Manifest.parse(yaml, name: "m.yaml")
        } catch {
            #expect(error.message == "destination 'd/f0' is already used by the item at line 3")
            #expect(error.location?.line == ManifestItemChunks.chunkSize + 5)
        }
        var chunks = ManifestItemChunks(
            (0..<(ManifestItemChunks.chunkSize + 1)).map { index in
                var item = ManifestItem(
                    url: "http://127.0.0.1:9/\(index)", location: SourceLocation(line: index, column: 1),
                    urlLocation: SourceLocation(line: index, column: 1), destLocation: SourceLocation(line: index, column: 1))
                item.dest = "x"
                return item
            })
        chunks[ManifestItemChunks.chunkSize].dest = "last"
        #expect(chunks[ManifestItemChunks.chunkSize].dest == "last")
        #expect(chunks.removeFirstChunk()?.count == ManifestItemChunks.chunkSize)
        #expect(chunks.count == 1)
        #expect(chunks.all.map(\.dest) == ["last"])
    }
}
