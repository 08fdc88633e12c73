/// The byte-range bookkeeping of one item (docs/engine.md#connections-and-ranges): which bytes are
/// still missing, which connection owns which of them, and which are written.
///
/// A pure value: no curl, no threads, no I/O, so a test (or a link simulator) drives
/// it with made-up connections. Every missing byte is in exactly one place: the pool
/// (nobody owns it) or the unwritten part `[next, end)` of one connection's region.
/// Bytes before a region's `next` are written. A connection's request asks for its
/// whole region once; the book never hands a byte to two owners, so the only bytes
/// fetched twice are those a victim received past a steal's cut before it saw the
/// cut, which `record` refuses and counts in `overrun`.
///
/// Shapes: the pool is handed out front first, in regions of an equal share of what
/// is left over the idle connections (at least `minSegment`, at most `regionCap`), so the
/// contiguous prefix that verification hashes during the download keeps growing; a
/// connection with nothing left to take steals from another's region, which
/// shortens the victim's region in place (`split`): as the engine does, the back of
/// the one that will finish last at the measured rates, cut so both finish together
/// (`stealFinishingTogether`, weighed by `CrewPolicy`).
struct SegmentBook: Sendable, Equatable {
    /// A connection's identifier (the item's worker slot).
    typealias Owner = Int

    /// The part of the file one connection is fetching with one request.
    struct Region: Sendable, Equatable {
        /// Where this region began when it was handed out (its request's first byte).
        var start: Int64
        /// The next byte the owner writes; `[start, next)` is written.
        var next: Int64
        /// One past the last byte the owner may write; a steal lowers it.
        var end: Int64

        /// Bytes still to write.
        var remaining: Int64 { end - next }
    }

    /// The file's length in bytes.
    let length: Int64
    /// Most connections the item uses; the pool is shared out over this many.
    let connections: Int
    /// No region is handed out smaller than this (unless less is left), and a region
    /// is stolen from only when at least twice this is left of it.
    let minSegment: Int64
    /// Largest region handed out of the pool. A larger region costs fewer requests; a
    /// smaller one keeps the prefix hashed during the download closer to the bytes
    /// arriving. The engine sets none: each connection asks once, since an upstream
    /// counts requests (docs/engine.md#politeness); the link simulator sets
    /// `regionCap(…)` to weigh the trade-off.
    var regionCap: Int64?

    /// Missing bytes no connection owns: sorted, disjoint, not touching.
    private(set) var pool: [ByteRange]
    /// Each connection's current region.
    private(set) var regions: [Owner: Region] = [:]
    /// Bytes a victim delivered past its region's end after a steal (refused by
    /// `record`, fetched twice): the deliberate steal overlap.
    private(set) var overrun: Int64 = 0
    /// Bytes written into the book's regions so far (excluding what was already present).
    private(set) var written: Int64 = 0

    /// A book for a file of `length` bytes of which `missing` are still to fetch (all of
    /// it by default; a resumed item passes its saved ranges).
    init(length: Int64, missing: [ByteRange]? = nil, connections: Int, minSegment: Int64, regionCap: Int64? = nil) {
        precondition(length >= 0 && connections >= 1 && minSegment >= 1)
        self.length = length
        self.connections = connections
        self.minSegment = minSegment
        self.regionCap = regionCap
        let wanted = missing ?? [ByteRange(lower: 0, upper: length)]
        pool = ByteRange.normalized(wanted.map { ByteRange(lower: max(0, $0.lower), upper: min(length, $0.upper)) })
    }

    // MARK: Reading

    /// The region `owner` is fetching, if any.
    func region(of owner: Owner) -> Region? { regions[owner] }

    /// Every missing byte, sorted and merged: what a checkpoint records
    /// (docs/engine.md#resume-state).
    var missing: [ByteRange] {
        ByteRange.normalized(pool + regions.values.map { ByteRange(lower: $0.next, upper: $0.end) })
    }

    /// Bytes still missing.
    var remaining: Int64 {
        pool.reduce(0) { $0 + $1.count } + regions.values.reduce(0) { $0 + $1.remaining }
    }

    /// Bytes present (written this run or before).
    var present: Int64 { length - remaining }

    /// Bytes no connection owns.
    var unowned: Int64 { pool.reduce(0) { $0 + $1.count } }

    /// Every byte is written.
    var isComplete: Bool { remaining == 0 }

    /// `[0, contiguousPrefix)` is written: the part verification can hash already.
    var contiguousPrefix: Int64 {
        var first = pool.first?.lower ?? length
        for region in regions.values where region.next < region.end { first = min(first, region.next) }
        return first
    }

    // MARK: Handing out work

    /// Hands `owner` a region from the front of the pool: an equal share of the pool
    /// over the connections that hold no work (so the first `connections` takes split
    /// a fresh file into equal regions), at least `minSegment`, at most `regionCap`;
    /// the whole first pool range when less than `minSegment` would be left of it.
    /// `atLeast`: the region reaches at least that byte (a first request that asked for
    /// more than an equal share keeps what it asked for).
    mutating func take(for owner: Owner, atLeast reach: Int64 = 0) -> ByteRange? {
        dropFinishedRegion(of: owner)
        guard regions[owner] == nil, let first = pool.first else { return nil }
        let busy = regions.values.filter { $0.next < $0.end }.count
        let idle = Int64(max(1, connections - busy))
        let share = unowned / idle + (unowned % idle == 0 ? 0 : 1)
        var size = max(minSegment, share, reach - first.lower)
        if let regionCap { size = min(size, max(minSegment, regionCap, reach - first.lower)) }
        if first.count - size < minSegment { size = first.count }
        let range = ByteRange(lower: first.lower, upper: first.lower + size)
        if range.upper >= first.upper { pool.removeFirst() } else { pool[0].lower = range.upper }
        regions[owner] = Region(start: range.lower, next: range.lower, end: range.upper)
        return range
    }

    /// Moves the back of `victim`'s region, from `cut` on, to `thief`, whose region it
    /// becomes: the victim keeps its request, whose end moves down to the cut. The one
    /// way a byte changes owner between two connections.
    mutating func split(_ victim: Owner, at cut: Int64, for thief: Owner) -> ByteRange {
        let end = regions[victim]!.end
        precondition(regions[thief] == nil && regions[victim]!.next <= cut && cut < end)
        regions[victim]?.end = cut
        regions[thief] = Region(start: cut, next: cut, end: end)
        return ByteRange(lower: cut, upper: end)
    }

    /// Hands `thief` work from the back of the region that will finish last, cut so
    /// that every connection finishes together (docs/engine.md#work-stealing). `rates`
    /// are the connections' measured bytes per second (0 for one that is stalled or
    /// waiting to retry; an owner missing from it counts at the mean of the others);
    /// `startsIn` says how long a connection whose request is under way still waits
    /// for its first byte (0 when missing), and `latency` how long the thief, and any
    /// other connection done with its region, will.
    ///
    /// Every missing byte can arrive by `T = (remaining + Σ rate·wait) / Σ rate`, when
    /// each connection has fetched `rate · (T − wait)`; the victim keeps that much of
    /// its region, aligned down to 64 KiB, and keeps its request, whose end moves down
    /// to the cut. The thief takes its own part of the rest, `thiefRate · (T − latency)`
    /// and at least `minSegment`; what lies beyond returns to the pool, where the
    /// connections that finish next take it with requests of their own, so a victim's
    /// request is cut once however many connections share its rest. A stalled victim
    /// keeps nothing, whatever its size; a moving one gives at least `minSegment`.
    ///
    /// `allows` is the caller's politeness (`CrewPolicy.mayCut`): it may refuse to
    /// cut a moving victim, given its rate, the thief's and the bytes cut from it; the
    /// region that finishes last among those it allows is the victim. Nil when no other
    /// region has more than `minSegment` left, or none that a steal finishes sooner.
    mutating func stealFinishingTogether(
        for thief: Owner, rates: [Owner: Double], startsIn: [Owner: Double] = [:], latency: Double,
        allows: (_ victimRate: Double, _ thiefRate: Double, _ taken: Int64) -> Bool = { _, _, _ in true }
    ) -> ByteRange? {
        dropFinishedRegion(of: thief)
        guard regions[thief] == nil else { return nil }
        let plan = StealPlan(book: self, thief: thief, rates: rates, startsIn: startsIn, latency: latency)
        var refused: Set<Owner> = []
        while let victim = plan.lastToFinish(in: self, excluding: refused) {
            if let cut = plan.cut(victim, in: self),
                victim.stalled || allows(plan.rate(victim.owner), plan.thiefRate, victim.region.end - cut.lower)
            {
                regions[victim.owner]?.end = cut.lower
                if cut.upper < victim.region.end {
                    pool = ByteRange.normalized(pool + [ByteRange(lower: cut.upper, upper: victim.region.end)])
                }
                regions[thief] = Region(start: cut.lower, next: cut.lower, end: cut.upper)
                return cut
            }
            refused.insert(victim.owner)
        }
        return nil
    }

    /// Gives `owner`'s region a specific range taken from the pool (a resumed item's
    /// first request, or the single stream of a server that refuses ranges); nil
    /// when part of it is not in the pool.
    mutating func claim(_ range: ByteRange, for owner: Owner) -> ByteRange? {
        dropFinishedRegion(of: owner)
        guard regions[owner] == nil, !range.isEmpty,
            let index = pool.firstIndex(where: { $0.lower <= range.lower && range.upper <= $0.upper })
        else { return nil }
        let host = pool[index]
        var replacement: [ByteRange] = []
        if host.lower < range.lower { replacement.append(ByteRange(lower: host.lower, upper: range.lower)) }
        if range.upper < host.upper { replacement.append(ByteRange(lower: range.upper, upper: host.upper)) }
        pool.replaceSubrange(index...index, with: replacement)
        regions[owner] = Region(start: range.lower, next: range.lower, end: range.upper)
        return range
    }

    // MARK: Progress and failure

    /// `owner` received `count` bytes for offset `offset`; returns how many of them to
    /// write: all, or fewer when they run past the region's end (a steal cut it, so the
    /// owner should end its request there). Bytes at another offset than the region's
    /// `next` are refused (0): a connection delivers its range in order.
    mutating func record(_ owner: Owner, at offset: Int64, count: Int64) -> Int64 {
        guard var region = regions[owner], offset == region.next, count > 0 else { return 0 }
        let accepted = min(count, region.remaining)
        overrun += count - accepted
        region.next += accepted
        written += accepted
        regions[owner] = region
        return accepted
    }

    /// `owner` stops (its request failed, or it retires): the unwritten rest of its
    /// region returns to the pool, where the next `take` finds it. The caller must see
    /// the pool emptied (by a live connection, a new one, or a mirror) before it
    /// gives the item up.
    mutating func giveBack(_ owner: Owner) {
        guard let region = regions.removeValue(forKey: owner) else { return }
        if region.next < region.end {
            pool = ByteRange.normalized(pool + [ByteRange(lower: region.next, upper: region.end)])
        }
    }

    /// Forgets a region with nothing left to write, so its owner can take another.
    mutating func dropFinishedRegion(of owner: Owner) {
        if let region = regions[owner], region.next >= region.end { regions[owner] = nil }
    }

    // MARK: Policy

    /// Bytes per second the verifier hashes, which would shape capped regions on near
    /// links (`regionCap`): SHA-256 with the CPU's SHA extensions, as measured on the
    /// benchmark machine (`openssl speed -evp sha256`: 1.46 GB/s). The link simulator's.
    static let measuredHashRate = 1.5e9

    /// The region size at which a request's round trip and the hash tail cost about
    /// the same: a request idles its connection for `roundTrip` seconds, so fewer,
    /// larger regions waste less of the link; but when the last byte arrives,
    /// verification still has to hash what lies beyond the contiguous prefix (about
    /// one region per other connection), at `hashRate` bytes per second. The total
    /// `length·roundTrip/(connections·size) + (connections−1)·size/hashRate` is
    /// smallest at `size = √(length·roundTrip·hashRate / (connections·(connections−1)))`.
    /// On a link with any real round trip this is more than `length / connections`,
    /// so each connection asks once; on loopback it keeps regions of a few MiB.
    static func regionCap(length: Int64, connections: Int, roundTrip: Double, hashRate: Double = measuredHashRate)
        -> Int64?
    {
        guard connections > 1, roundTrip > 0, length > 0 else { return nil }
        let n = Double(connections)
        let size = (Double(length) * roundTrip * hashRate / (n * (n - 1))).squareRoot()
        guard size.isFinite, size < Double(length) else { return nil }
        return Int64(size)
    }
}
