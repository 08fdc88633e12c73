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

    /// Cuts `ranges` into about `pieces` chunks of similar size, none smaller than
    /// `minimum` unless a range itself is; chunks never cross range boundaries.
    static func split(_ ranges: [ByteRange], into pieces: Int, minimum: Int64) -> [ByteRange] {
        let total = ranges.reduce(0) { $0 + $1.count }
        guard total > 0 else { return [] }
        let count = max(1, min(Int64(pieces), total / max(minimum, 1)))
        let target = (total + count - 1) / count
        var chunks: [ByteRange] = []
        for range in ranges {
            let parts = max(1, (range.count + target - 1) / target)
            let size = range.count / parts
            var start = range.lower
            for part in 0..<parts {
                let end = part == parts - 1 ? range.upper : start + size
                chunks.append(ByteRange(lower: start, upper: end))
                start = end
            }
        }
        return chunks
    }
}
