import Foundation

/// Shards `first` to `last` of `count`, one after another: how a merged report names
/// the shards it has no report of (docs/reports.md#merging-shard-reports), so that its
/// size and the merge's work follow the reports given, never the count.
public struct ShardSpan: Sendable, Equatable, CustomStringConvertible {
    public let first: Int
    public let last: Int
    public let count: Int

    /// Nil unless `0 <= first <= last < count` and `count` is a shard count.
    public init?(first: Int, last: Int, count: Int) {
        guard Rules.shardCount.contains(count), first >= 0, first <= last, last < count else { return nil }
        self.first = first
        self.last = last
        self.count = count
    }

    /// Parses `I/N` (one shard) or `I-J/N`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let count = Units.parseWholeNumber(String(parts[1])) else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = Units.parseWholeNumber(String(bounds[0])),
            let last = bounds.count == 2 ? Units.parseWholeNumber(String(bounds[1])) : first
        else { return nil }
        self.init(first: first, last: last, count: count)
    }

    /// `I/N` for one shard, `I-J/N` for several.
    public var description: String { first == last ? "\(first)/\(count)" : "\(first)-\(last)/\(count)" }

    /// How many shards it names.
    public var size: Int { last - first + 1 }

    /// The spans of `0..<count` that `present` (shard indexes, in any order, each below
    /// `count`) leaves out: work in the number of shards present, not in `count`.
    public static func missing(from present: some Collection<Int>, count: Int) -> [ShardSpan] {
        var spans: [ShardSpan] = []
        var next = 0
        for index in present.sorted() where index >= next {
            if index > next, let span = ShardSpan(first: next, last: index - 1, count: count) { spans.append(span) }
            next = index + 1
        }
        if next < count, let span = ShardSpan(first: next, last: count - 1, count: count) { spans.append(span) }
        return spans
    }
}
