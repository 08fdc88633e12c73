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
}
