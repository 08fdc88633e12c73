/// A half-open range of byte offsets `[lower, upper)`.
struct ByteRange: Sendable, Hashable, Codable {
    var lower: Int64
    var upper: Int64

    var count: Int64 { upper - lower }
    var isEmpty: Bool { upper <= lower }

    /// Sorts and merges touching or overlapping ranges.
    static func normalized(_ ranges: [ByteRange]) -> [ByteRange] {
        var merged: [ByteRange] = []
        for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lower < $1.lower }) {
            if let last = merged.last, range.lower <= last.upper {
                merged[merged.count - 1].upper = max(last.upper, range.upper)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// The range a connection takes next from the front of `ranges` (front first, so
    /// the file's contiguous prefix, which is what can be hashed, grows all along):
    /// `piece` bytes, at least `minimum`, fewer when that would leave some of
    /// `connections` without work, and the whole first range when less than
    /// `minimum` would be left of it.
    static func frontChunk(of ranges: [ByteRange], piece: Int64, minimum: Int64, connections: Int) -> ByteRange? {
        guard let first = ranges.first, !first.isEmpty else { return nil }
        let remaining = ranges.reduce(0) { $0 + $1.count }
        var size = max(minimum, min(piece, remaining / Int64(max(1, connections))))
        if first.count - size < minimum { size = first.count }
        return ByteRange(lower: first.lower, upper: first.lower + size)
    }
}
