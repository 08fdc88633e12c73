import Foundation
import PropertyBased
import Testing

@testable import JGMirror

/// The compact table a run looks state records up in (docs/state.md#the-state-folder).
struct RecordTableTests {
    /// A record with every field set from `seed`, some left out.
    static func record(_ dest: String, seed: Int) -> FileRecord {
        let digits = Array("0123456789abcdef")
        func hex(_ count: Int, _ salt: Int) -> String {
            String((0..<count).map { digits[($0 * 7 + seed * 13 + salt) % 16] })
        }
        let value = Int64(seed)
        return FileRecord(
            dest: dest,
            stat: FileStat(
                size: value * 1000, mtimeNs: -value * 3, ctimeNs: value << 40, inode: UInt64.max - UInt64(seed),
                device: UInt64(seed) << 50),
            sha256: seed % 5 == 0 ? nil : hex(64, 1), sha512: seed % 3 == 0 ? hex(128, 2) : nil,
            etag: seed % 4 == 0 ? nil : seed % 4 == 1 ? "" : "\"\(seed)-é\"",
            lastModified: seed % 2 == 0 ? "Mon, 02 Nov 2026 10:00:\(seed % 60) GMT" : nil,
            verifiedAt: seed % 6 == 0 ? nil : value * 1_000_000_007, checkedAt: value * 999)
    }

    /// `record` as the table gives it back: its URL kept as the URL's hash only, which
    /// still tells whether the record was written for a URL.
    static func asTheTableGivesItBack(_ record: FileRecord) -> FileRecord {
        var record = record
        record.urlHash = record.url.map(StableHash.fnv1a64)
        record.url = nil
        return record
    }

    @Test func everyRecordRoundTripsInAnyOrder() async {
        await propertyCheck(count: 60, input: Gen.int(in: 0...1_000_000).array(of: 0...80)) { seeds in
            // Destinations that share prefixes, differ in length, and are not ASCII.
            let names = ["a", "a/b", "ab", "a/b/c.bin", "é/ü", "b", "a0", "Z", "a/b/", "a\u{1}"]
            var records: [String: FileRecord] = [:]
            for (index, seed) in seeds.enumerated() {
                let dest = names[seed % names.count] + (index % 3 == 0 ? "" : "/\(seed)")
                records[dest] = Self.record(dest, seed: seed)
            }
            let table = RecordTable(records.values.shuffled())
            #expect(table.count == records.count)
            for (dest, record) in records {
                #expect(table[dest] == Self.asTheTableGivesItBack(record))
            }
            for missing in ["", "a/", "a/b/c", "zz", "é"] where records[missing] == nil {
                #expect(table[missing] == nil)
            }
        }
    }

    @Test func emptyTableFindsNothing() {
        #expect(RecordTable()[""] == nil)
        #expect(RecordTable([])["a"] == nil)
    }

    @Test func storeLoadsWhatItSavedWithoutTheURL() throws {
        try withTemporaryFolder { folder in
            let opening = StateStore.open(folder: folder)
            let store = try #require(opening.store)
            defer { store.close() }
            let records = (0..<300).map { Self.record("d\($0 % 7)/f\($0).bin", seed: $0) }.map { record in
                var record = record
                record.url = "http://127.0.0.1/\(record.dest)"
                return record
            }
            #expect(store.save(records.shuffled()) == nil)
            let table = try store.recordTable()
            #expect(table.count == records.count)
            for record in records {
                #expect(table[record.dest] == Self.asTheTableGivesItBack(record))
                if let url = record.url {
                    #expect(table[record.dest]?.isFor(url: url) == true && table[record.dest]?.isFor(url: url + "2") == false)
                }
            }
            #expect(table["d0/f1.bin"] == nil)
        }
    }

    func withTemporaryFolder(_ body: (String) throws -> Void) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jgmirror-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try body(path)
    }
}
