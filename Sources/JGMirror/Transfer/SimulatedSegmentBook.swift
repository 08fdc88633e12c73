/// The item's `SegmentBook` as the link simulator drives it: the same value, with the
/// operations an engine calls, visible to the other targets of this package (the book
/// itself stays internal to the library).
package struct SimulatedSegmentBook: Sendable {
    private var book: SegmentBook

    /// A book for a fresh file of `length` bytes shared over `connections`.
    package init(length: Int64, connections: Int, minSegment: Int64, regionCap: Int64?) {
        book = SegmentBook(length: length, connections: connections, minSegment: minSegment, regionCap: regionCap)
    }

    /// Bytes per second the engine takes the verifier to hash (`SegmentBook.measuredHashRate`).
    package static let measuredHashRate = SegmentBook.measuredHashRate

    /// The region size the engine would choose (`SegmentBook.regionCap`).
    package static func regionCap(length: Int64, connections: Int, roundTrip: Double, hashRate: Double) -> Int64? {
        SegmentBook.regionCap(length: length, connections: connections, roundTrip: roundTrip, hashRate: hashRate)
    }

    /// New work from the front of the pool, else the back half of the largest region
    /// (`SegmentBook.stealHalf(for:)`): the engine's steal before it weighed rates.
    package mutating func takeOrStealHalf(for owner: Int) -> Range<Int64>? {
        (book.take(for: owner) ?? book.stealHalf(for: owner)).map { $0.lower..<$0.upper }
    }

    /// New work from the front of the pool only, never stolen (`SegmentBook.take(for:)`).
    package mutating func take(for owner: Int) -> Range<Int64>? { book.take(for: owner).map { $0.lower..<$0.upper } }

    /// New work for `thief` as the engine deals it (`CrewPolicy.work`): the range,
    /// and the victim of a steal left with nothing, whose request is to be dropped.
    package mutating func work(
        for thief: Int, policy: CrewPolicy, in snapshot: CrewPolicy.Snapshot
    ) -> (range: Range<Int64>, dropping: Int?)? {
        guard let work = policy.work(for: thief, in: snapshot, book: &book) else { return nil }
        let dropping: Int? = if case .steal(_, let victim) = work { victim } else { nil }
        return (work.range.lower..<work.range.upper, dropping)
    }

    /// Gives `owner` exactly `range` out of the pool (`SegmentBook.claim(_:for:)`).
    package mutating func claim(_ range: Range<Int64>, for owner: Int) -> Range<Int64>? {
        book.claim(ByteRange(lower: range.lowerBound, upper: range.upperBound), for: owner).map { $0.lower..<$0.upper }
    }

    /// Every connection's unwritten region `[next, end)`, by owner.
    package var regions: [Int: Range<Int64>] { book.regions.mapValues { $0.next..<$0.end } }

    /// One past the last byte `owner` may write now (lowered by steals), if it has a region.
    package func end(of owner: Int) -> Int64? { book.region(of: owner)?.end }

    /// The next byte `owner` writes, if it has a region.
    package func next(of owner: Int) -> Int64? { book.region(of: owner)?.next }

    /// Records `count` bytes at `offset` for `owner`; returns how many the book accepted.
    package mutating func record(_ owner: Int, at offset: Int64, count: Int64) -> Int64 {
        book.record(owner, at: offset, count: count)
    }

    /// `owner` stops; the rest of its region returns to the pool.
    package mutating func giveBack(_ owner: Int) { book.giveBack(owner) }

    /// `[0, contiguousPrefix)` is written.
    package var contiguousPrefix: Int64 { book.contiguousPrefix }

    /// Bytes still missing.
    package var remaining: Int64 { book.remaining }

    /// Every byte is written.
    package var isComplete: Bool { book.isComplete }

    /// Bytes a victim delivered past a steal's cut (refused, fetched twice).
    package var overrun: Int64 { book.overrun }

    /// Missing bytes, sorted and merged.
    package var missing: [Range<Int64>] { book.missing.map { $0.lower..<$0.upper } }
}

extension SegmentBook {
    /// Hands `owner` the back half of the largest region another connection still has:
    /// the engine's steal before it weighed rates (`CrewPolicy`), which the link
    /// simulator keeps to compare against; the engine never calls it. The cut is
    /// aligned to 64 KiB; nil when no region has `2 × minSegment` left.
    mutating func stealHalf(for owner: Owner) -> ByteRange? {
        dropFinishedRegion(of: owner)
        guard region(of: owner) == nil else { return nil }
        // Ties go to the lowest offset so the outcome does not depend on dictionary order.
        let victim = regions.filter { $0.key != owner }.max { a, b in
            a.value.remaining != b.value.remaining ? a.value.remaining < b.value.remaining : a.value.next > b.value.next
        }
        guard let (victimOwner, region) = victim, region.remaining >= 2 * minSegment else { return nil }
        var cut = region.next + region.remaining / 2
        let aligned = cut - cut % (64 * 1024)
        if aligned - region.next >= minSegment { cut = aligned }
        return split(victimOwner, at: cut, for: owner)
    }
}
