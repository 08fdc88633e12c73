import Foundation

/// The state database's file records as a run consults them, by destination, in
/// little memory: a fixed-size row per record (stat and times as integers, SHA-256 as
/// 32 raw bytes) and one byte buffer for what varies in length (the destination, and
/// a SHA-512, ETag and Last-Modified when present), searched by binary search over the
/// destinations' bytes.
///
/// A dictionary of `FileRecord`s holds a heap string per destination, SHA-256, URL
/// and validator: a settled no-op over 100,000 recorded files peaked 58 MiB higher
/// with one than with this table, which grows the process by about 14 MiB (150 bytes
/// a record) while it loads. The source URL is kept as its 64-bit `StableHash`: the
/// only question asked of it is whether a record was written for an item's URL.
public struct RecordTable: Sendable {
    /// One record, all but its variable-length parts, which are `bytes[start...]`:
    /// the destination, then the SHA-512 (64 bytes) when `hasSHA512`, then the ETag
    /// and the Last-Modified (their lengths; -1 for none).
    private struct Row: Sendable {
        var stat: FileStat
        /// `Int64.min`: never verified.
        var verifiedAt: Int64
        var checkedAt: Int64
        var sha256: (UInt64, UInt64, UInt64, UInt64)
        /// The URL's `StableHash`; 0 when the record has no URL.
        var urlHash: UInt64
        var start: Int
        var destLength: Int32
        var etagLength: Int32
        var lastModifiedLength: Int32
        var hasSHA256: Bool
        var hasSHA512: Bool

        var sha512Start: Int { start + Int(destLength) }
        var etagStart: Int { sha512Start + (hasSHA512 ? 64 : 0) }
        var lastModifiedStart: Int { etagStart + max(0, Int(etagLength)) }
    }

    private var rows: [Row] = []
    private var bytes: [UInt8] = []
    /// Whether `rows` are in the order of their destinations' bytes (appending keeps
    /// track; a lookup needs it).
    private var ordered = true

    /// An empty table (no database, or a new one).
    public init() {}

    /// An empty table with room for `count` records whose variable-length parts take
    /// `bytes` in all, so that loading a large database allocates once.
    init(reservingCapacity count: Int, bytes: Int) {
        rows.reserveCapacity(count)
        self.bytes.reserveCapacity(bytes)
    }

    /// A table of `records` (tests, and callers that already hold records).
    public init(_ records: some Sequence<FileRecord>) {
        for record in records {
            append(
                dest: record.dest, stat: record.stat,
                sha256: record.sha256.flatMap { StateStore.digestBytes($0, count: 32) }.map { [UInt8]($0) },
                sha512: record.sha512.flatMap { StateStore.digestBytes($0, count: 64) }.map { [UInt8]($0) }, etag: record.etag,
                lastModified: record.lastModified, url: record.url, verifiedAt: record.verifiedAt, checkedAt: record.checkedAt)
        }
        finish()
    }

    /// How many records it holds.
    public var count: Int { rows.count }

    /// Adds a record (destinations are unique, as they are the database's key). A
    /// digest of the wrong length is dropped, as a record without one. Call `finish`
    /// after the last one.
    mutating func append(
        dest: String, stat: FileStat, sha256: [UInt8]?, sha512: [UInt8]?, etag: String?, lastModified: String?, url: String?,
        verifiedAt: Int64?, checkedAt: Int64
    ) {
        let start = bytes.count
        var destination = dest
        let destLength = destination.withUTF8 { buffer in
            bytes.append(contentsOf: buffer)
            return buffer.count
        }
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let hasSHA256 = sha256?.count == 32
        if let sha256, hasSHA256 {
            sha256.withUnsafeBytes { source in withUnsafeMutableBytes(of: &digest) { $0.copyMemory(from: source) } }
        }
        let hasSHA512 = sha512?.count == 64
        if let sha512, hasSHA512 { bytes.append(contentsOf: sha512) }
        let etagLength = Self.append(etag, to: &bytes)
        let lastModifiedLength = Self.append(lastModified, to: &bytes)
        if ordered, let last = rows.last,
            bytes.withUnsafeBytes({
                Self.compare(Self.key(of: last, in: $0), UnsafeRawBufferPointer(rebasing: $0[start..<start + destLength]))
            })
                != .less
        {
            ordered = false
        }
        rows.append(
            Row(
                stat: stat, verifiedAt: verifiedAt ?? .min, checkedAt: checkedAt, sha256: digest,
                urlHash: url.map(StableHash.fnv1a64) ?? 0, start: start,
                destLength: Int32(destLength), etagLength: etagLength, lastModifiedLength: lastModifiedLength,
                hasSHA256: hasSHA256,
                hasSHA512: hasSHA512))
    }

    /// Orders the rows for lookup when they were not appended in order.
    mutating func finish() {
        guard !ordered else { return }
        bytes.withUnsafeBytes { bytes in
            rows.sort { Self.compare(Self.key(of: $0, in: bytes), Self.key(of: $1, in: bytes)) == .less }
        }
        ordered = true
    }

    /// The record of `dest`, nil when there is none. Its `url` is nil (only its hash is kept).
    public subscript(dest: String) -> FileRecord? {
        guard let row = find(dest) else { return nil }
        let stat = row.stat
        let sha256 = row.hasSHA256 ? withUnsafeBytes(of: row.sha256) { SHA256.hex($0) } : nil
        let sha512 = row.hasSHA512 ? SHA256.hex(bytes[row.sha512Start..<row.sha512Start + 64]) : nil
        var record = FileRecord(
            dest: dest, stat: stat, sha256: sha256, sha512: sha512, etag: string(at: row.etagStart, length: row.etagLength),
            lastModified: string(at: row.lastModifiedStart, length: row.lastModifiedLength),
            verifiedAt: row.verifiedAt == .min ? nil : row.verifiedAt, checkedAt: row.checkedAt)
        record.urlHash = row.urlHash == 0 ? nil : row.urlHash
        return record
    }

    private func find(_ dest: String) -> Row? {
        precondition(ordered, "RecordTable looked up before finish()")
        var dest = dest
        return dest.withUTF8 { wanted in
            bytes.withUnsafeBytes { bytes -> Row? in
                var low = 0
                var high = rows.count
                while low < high {
                    let middle = (low + high) / 2
                    switch Self.compare(Self.key(of: rows[middle], in: bytes), UnsafeRawBufferPointer(wanted)) {
                    case .less: low = middle + 1
                    case .greater: high = middle
                    case .equal: return rows[middle]
                    }
                }
                return nil
            }
        }
    }

    private static func key(of row: Row, in bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[row.start..<row.start + Int(row.destLength)])
    }

    private func string(at start: Int, length: Int32) -> String? {
        length < 0 ? nil : String(decoding: bytes[start..<start + Int(length)], as: UTF8.self)
    }

    /// Appends `text`'s UTF-8 and returns its length, or -1 for nil.
    private static func append(_ text: String?, to bytes: inout [UInt8]) -> Int32 {
        guard var text else { return -1 }
        return text.withUTF8 { buffer in
            bytes.append(contentsOf: buffer)
            return Int32(buffer.count)
        }
    }

    private enum Order { case less, equal, greater }

    /// Byte-wise, a prefix first: SQLite's BINARY collation, the order of the key.
    private static func compare(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Order {
        let common = min(left.count, right.count)
        let bytes = common == 0 ? 0 : memcmp(left.baseAddress!, right.baseAddress!, common)
        if bytes != 0 { return bytes < 0 ? .less : .greater }
        return left.count == right.count ? .equal : left.count < right.count ? .less : .greater
    }
}
