import Foundation
import Testing

@testable import JGMirror

/// `ResultRow`: the compact row a run keeps of each item's result.
@Suite struct ResultRowTests {
    /// A run keeps compact rows and rebuilds each result from the row and its planned
    /// item; every field must come back as it was recorded.
    @Test func rowsGiveBackTheResultTheyWereMadeFrom() throws {
        let sum = String(repeating: "ab", count: 32)
        let other = String(repeating: "cd", count: 32)
        let sum512 = String(repeating: "ef", count: 64)
        let yaml = """
            version: 1
            items:
              - {url: "http://u:p@h/a", dest: a.bin, sha256: \(sum), tag: 4, tags: [x, y]}
              - {url: "https://h/b", dest: b.bin, insecure: true}
              - {url: "https://h/c", dest: c.bin, sha512: \(sum512)}
            """
        let items = Plan(manifest: try Manifest.parse(yaml, name: "rows.yaml")).items
        let (a, b, c) = (items[0], items[1], items[2])
        func base(_ item: PlannedItem, _ status: ItemStatus) -> ItemResult {
            ItemResult(
                dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status,
                sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.options.insecure)
        }
        var verified512 = base(c, .downloaded)
        verified512.sha512Actual = sum512
        var mismatch512 = base(c, .mismatch)
        mismatch512.sha512Actual = String(repeating: "0", count: 128)
        var downloaded = base(a, .downloaded)
        (downloaded.bytes, downloaded.bytesDownloaded, downloaded.resumedFrom) = (5000, 3000, 2000)
        (downloaded.connections, downloaded.attempts, downloaded.durationS) = (4, 6, 1.25)
        downloaded.sha256Actual = sum
        var mismatch = base(a, .mismatch)
        mismatch.sha256Actual = other
        mismatch.error = ItemError(code: .checksumMismatch, message: "SHA-256 is \(other)")
        var unverified = base(b, .unverified)
        unverified.sha256Actual = other
        unverified.note = "remote file changed; restarted from zero"
        var noted = downloaded
        noted.note = "resume state discarded: the remote file changed"
        var failed = base(b, .failed)
        failed.error = ItemError(code: .http(404), message: "404")
        var renamed = base(b, .skipped)
        renamed.dest = "elsewhere.bin"
        var huge = base(b, .downloaded)
        huge.connections = Int(Int32.max) + 1
        let cases: [(ItemResult, PlannedItem)] = [
            (downloaded, a), (noted, a), (mismatch, a), (unverified, b), (failed, b), (base(b, .skipped), b), (renamed, b),
            (huge, b),
            (verified512, c), (mismatch512, c),
        ]
        for (result, item) in cases {
            #expect(ResultRow(result, of: item).result(for: item) == result)
        }
        #expect(downloaded.url == "http://***@h/a")
    }
}
