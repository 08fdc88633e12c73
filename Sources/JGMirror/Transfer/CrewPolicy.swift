/// Who fetches what next among one item's connections (docs/engine.md#work-stealing): the engine's
/// whole steal and replacement policy, in one value.
///
/// It sees the crew only as a `Snapshot` (each connection's state, position and
/// bytes, the link's round trip, the engine's `now`) and the item's `SegmentBook`, and
/// answers with what to do: take a range from the pool, steal one with a cut (dropping
/// a stalled victim), hire a replacement for a stalled or lagging connection, or
/// nothing (the asking connection retires). `Crew` carries the answers out; the link
/// simulator drives the same value with simulated connections. No clock, no threads,
/// no curl: tests drive it in virtual time.
///
/// Its memory between two looks is the little the replacement triggers need: the
/// item's progress at the last replacement, the fastest rate a retired connection
/// showed, and where each connection stood at the last look for a lagging one.
package struct CrewPolicy: Sendable {
    // MARK: Constants, each with its reason

    /// Seconds a request's bytes must span before its own rate counts: the first
    /// packets after the head come in a burst, far faster than the connection
    /// sustains; until then the previous request's rate stands in.
    package static let rateWindow = 0.05
    /// A connection without a byte for this many round trips counts as stalled (rate
    /// 0, its region taken over): a healthy connection's gap is about one round trip.
    package static let stallRoundTrips = 4.0
    /// ... but never under this many seconds: on loopback (microsecond round trips) a
    /// busy machine's scheduling pauses would otherwise count as stalls.
    package static let stallFloor = 1.0
    /// A thief whose request needs a new connection (its last one was cut short and
    /// closed, or it is a new worker) waits this many round trips for its first byte:
    /// connect, then request. One on a connection kept open.
    package static let newConnectionRoundTrips = 2.0
    /// Seconds at least between two looks for a lagging region, whose rates are the
    /// bytes moved in between: over a shorter span one late packet reads as a halt.
    package static let lagLookInterval = 0.1
    /// A region lags when it moves this many times slower than the fastest rate a
    /// retired connection showed: a connection that fast would take it over with
    /// room for its connect. Less, and a steal's two round trips rarely pay.
    package static let lagFactor = 4.0
    /// What a server may have put into one connection beyond what its client read: its
    /// send buffer, up to 4 MiB on Linux (`tcp_wmem`), and the client's receive buffer
    /// on top when the client reads slowly. Cutting a request short wastes that much.
    package static let cutWaste: Int64 = 4 << 20
    /// A connection that is moving is cut only when the steal takes at least this
    /// much: `cutWaste` is then under 3 % of it (docs/engine.md#politeness).
    package static let politeSteal: Int64 = 32 * cutWaste

    /// Seconds at most between two looks at a worker waiting for a connection slot:
    /// slots free without notice when other items' requests end.
    package static let slotLookInterval = 0.05

    // MARK: The snapshot

    /// One connection as the policy weighs it (engine clock, seconds).
    package struct Connection: Sendable, Equatable {
        package enum Phase: Sendable, Equatable {
            /// Has work and waits for a connection slot.
            case ready
            /// Waits out a retry delay until then.
            case backoff(until: Double)
            /// Its request is under way, or just ended.
            case active
        }

        /// Its owner id in the item's `SegmentBook`.
        package var slot: Int
        package var phase: Phase
        /// A request is in flight (it holds a curl handle).
        package var inFlight: Bool
        /// The source it fetches from.
        package var source: Int
        /// The next byte its request writes.
        package var position: Int64
        /// When its current request left, and when that request's first and latest bytes arrived.
        package var sentAt: Double
        package var firstByteAt: Double?
        package var lastByteAt: Double
        /// Bytes the current request delivered.
        package var requestBytes: Int64
        /// Bytes per second the previous request delivered (`shownRate` then).
        package var previousRate: Double?
        /// The current request was cut short and closed its connection.
        package var truncated: Bool

        package init(
            slot: Int, phase: Phase, inFlight: Bool, source: Int = 0, position: Int64 = 0, sentAt: Double,
            firstByteAt: Double?, lastByteAt: Double, requestBytes: Int64, previousRate: Double?, truncated: Bool = false
        ) {
            self.slot = slot
            self.phase = phase
            self.inFlight = inFlight
            self.source = source
            self.position = position
            self.sentAt = sentAt
            self.firstByteAt = firstByteAt
            self.lastByteAt = lastByteAt
            self.requestBytes = requestBytes
            self.previousRate = previousRate
            self.truncated = truncated
        }

        /// The rate the connection has shown: its current request's so far (once its
        /// bytes span `rateWindow`), else its previous request's.
        package var shownRate: Double? {
            if let firstByteAt, lastByteAt - firstByteAt >= CrewPolicy.rateWindow {
                return Double(requestBytes) / (lastByteAt - firstByteAt)
            }
            return previousRate
        }

        /// Bytes per second it delivers at `now`, as a steal weighs it: the current
        /// request's rate since its first byte (once that is `rateWindow` ago), else the
        /// previous request's; 0 when it waits to retry or for a slot, or when nothing
        /// arrived for `stallAfter` seconds; nil when it has shown no rate yet.
        package func rate(now: Double, stallAfter: Double) -> Double? {
            guard case .active = phase else { return 0 }
            guard let firstByteAt else { return now - sentAt > stallAfter ? 0 : previousRate }
            if now - lastByteAt > stallAfter { return 0 }
            return now - firstByteAt >= CrewPolicy.rateWindow ? Double(requestBytes) / (now - firstByteAt) : previousRate
        }
    }

    /// The crew at one moment.
    package struct Snapshot: Sendable, Equatable {
        /// Every connection the item has (retired ones are gone).
        package var connections: [Connection]
        /// The shortest request-to-first-byte time seen; 0 before any.
        package var roundTrip: Double
        package var now: Double
        /// `--limit-rate` pauses connections, so a silent one is not stalled.
        package var rateLimited = false
        /// The item may open connections up to this many.
        package var limit: Int
        /// The slot the next connection hired gets.
        package var nextSlot: Int
        /// The server honours ranges and the connections were fanned out.
        package var fannedOut = true
        /// Bytes the item received this run.
        package var progress: Int64 = 0
        /// Some source has not answered with a permanent error.
        package var hasLiveSource = true

        package init(
            connections: [Connection], roundTrip: Double, now: Double, rateLimited: Bool = false, limit: Int,
            nextSlot: Int, fannedOut: Bool = true, progress: Int64 = 0, hasLiveSource: Bool = true
        ) {
            self.connections = connections
            self.roundTrip = roundTrip
            self.now = now
            self.rateLimited = rateLimited
            self.limit = limit
            self.nextSlot = nextSlot
            self.fannedOut = fannedOut
            self.progress = progress
            self.hasLiveSource = hasLiveSource
        }

        /// Seconds without a byte after which a connection counts as stalled; never
        /// while `--limit-rate` pauses connections.
        package var stallAfter: Double {
            rateLimited ? .infinity : max(CrewPolicy.stallFloor, CrewPolicy.stallRoundTrips * roundTrip)
        }

        /// A connection to spare: the item may hire one more.
        var spare: Bool { connections.count < limit }
    }

    // MARK: Actions

    /// New work for a connection whose region is done.
    enum Work: Equatable {
        /// The front of the pool.
        case take(ByteRange)
        /// The back of another region, cut so both finish together; `dropping` is a
        /// stalled victim left with nothing, whose request is dropped, not waited for.
        case steal(ByteRange, dropping: Int?)

        var range: ByteRange {
            switch self {
            case .take(let range), .steal(let range, _): range
            }
        }
    }

    /// A new connection a look at the crew calls for, in slot `Snapshot.nextSlot`.
    enum Replacement: Equatable {
        /// Connections hold bytes they do not fetch: the new one, on another source
        /// than theirs when there is one, does `work`.
        case stalled(avoiding: Set<Int>, work: Work)
        /// A region lags: the new one steals `range` of it.
        case lagging(ByteRange)
    }

    // MARK: Memory

    /// The item's progress when a connection last replaced another: a new
    /// replacement needs progress since, so an item whose every request fails ends.
    package private(set) var progressAtReplacement: Int64 = 0
    /// The fastest rate a retired connection showed.
    package private(set) var fastestRetired = 0.0
    /// When the last look for a lagging region was, and where each connection stood.
    private var lastLook: (at: Double, positions: [Int: Int64]) = (0, [:])

    package init() {}

    /// A connection that showed `shownRate` retired.
    package mutating func retired(shownRate: Double?) { fastestRetired = max(fastestRetired, shownRate ?? 0) }

    // MARK: Decisions

    /// Whether a steal may cut a victim that is still moving (a stalled one always may:
    /// nothing flows to waste): when it moves `lagFactor` times slower than the thief
    /// did, or the steal takes `politeSteal` or more. Otherwise the thief retires and
    /// the victim finishes its region, so that on a quiet link every request ends where
    /// it asked to and the server sends the file's bytes once (docs/engine.md#politeness).
    static func mayCut(victimRate: Double, thiefRate: Double, taken: Int64) -> Bool {
        victimRate * lagFactor <= thiefRate || taken >= politeSteal
    }

    /// New work for `thief`, whose region is done: the front of the pool, else the
    /// back of the region that will finish last at the rates the connections show
    /// now, cut so both finish together (`SegmentBook.stealFinishingTogether`). The
    /// thief waits a round trip for its first byte, `newConnectionRoundTrips` when its
    /// request was cut short and closed its connection; a steal happens only when it
    /// still finishes sooner. Nil: nothing worth taking, the thief retires. The
    /// snapshot is taken only when a steal is weighed.
    func work(for thief: Int, in crew: @autoclosure () -> Snapshot, book: inout SegmentBook) -> Work? {
        if let range = book.take(for: thief) { return .take(range) }
        let snapshot = crew()
        var rates: [Int: Double] = [:]
        var startsIn: [Int: Double] = [:]
        let stallAfter = snapshot.stallAfter
        for connection in snapshot.connections {
            rates[connection.slot] = connection.rate(now: snapshot.now, stallAfter: stallAfter)
            if connection.inFlight, connection.firstByteAt == nil {
                startsIn[connection.slot] = max(0, connection.sentAt + snapshot.roundTrip - snapshot.now)
            }
        }
        let truncated = snapshot.connections.first { $0.slot == thief }?.truncated ?? false
        let latency = snapshot.roundTrip * (truncated ? Self.newConnectionRoundTrips : 1)
        guard
            let range = book.stealFinishingTogether(
                for: thief, rates: rates, startsIn: startsIn, latency: latency, allows: Self.mayCut)
        else { return nil }
        // A stalled victim kept nothing: its request is dropped rather than waited for.
        let victim = snapshot.connections.first {
            $0.slot != thief && $0.inFlight && book.region(of: $0.slot)?.end == range.lower
        }
        let dropped = victim.flatMap { book.region(of: $0.slot)?.remaining == 0 ? $0.slot : nil }
        return .steal(range, dropping: dropped)
    }

    /// A connection to add at this look, if any. First a stalled one's replacement:
    /// with a connection to spare and progress since the last replacement (so an
    /// origin that stalls every connection still ends), a new connection takes over
    /// without waiting for the stalled request's timeout. Else a lagging region's
    /// (`lagging`). `canConnectNext` says whether the next connection's source has a
    /// slot free now.
    mutating func replacement(
        in snapshot: Snapshot, book: inout SegmentBook, canConnectNext: () -> Bool
    ) -> Replacement? {
        if let stalled = stalledReplacement(in: snapshot, book: &book) { return stalled }
        return lagging(in: snapshot, book: &book, canConnectNext: canConnectNext).map { .lagging($0) }
    }

    /// A range given back must be taken again before the item can fail (docs/engine.md#retries):
    /// with a connection to spare and progress since the last replacement, a new one takes
    /// it now (the others take it when their own region ends).
    mutating func strandedTake(in snapshot: Snapshot, book: inout SegmentBook) -> ByteRange? {
        guard book.unowned > 0, snapshot.spare, snapshot.progress > progressAtReplacement, snapshot.hasLiveSource
        else { return nil }
        progressAtReplacement = snapshot.progress
        return book.take(for: snapshot.nextSlot)
    }

    private mutating func stalledReplacement(in snapshot: Snapshot, book: inout SegmentBook) -> Replacement? {
        guard snapshot.fannedOut, snapshot.spare, snapshot.progress > progressAtReplacement else { return nil }
        let stalled = snapshot.connections.filter { isStalled($0, in: snapshot, book: book) }
        guard !stalled.isEmpty, snapshot.hasLiveSource else { return nil }
        var withNew = snapshot
        withNew.connections.append(
            Connection(
                slot: snapshot.nextSlot, phase: .ready, inFlight: false, sentAt: 0, firstByteAt: nil, lastByteAt: 0,
                requestBytes: 0, previousRate: nil))
        guard let work = work(for: snapshot.nextSlot, in: withNew, book: &book) else { return nil }
        progressAtReplacement = snapshot.progress
        return .stalled(avoiding: Set(stalled.map(\.source)), work: work)
    }

    /// A connection whose region ends declines a steal that does not pay at the rates
    /// it sees then, and retires; a victim that has not shown its rate yet counts at
    /// the others' mean, so a connection 160 times slower than the rest could keep its
    /// whole region (seen once in about 13 loaded test runs: 2 MiB at 50 kB/s, 44 s).
    /// Each look tries again: with a connection to spare, every region moving, one of
    /// them `lagFactor` times slower than the fastest rate a retired connection showed,
    /// and none unowned, a new connection steals when finishing together pays for its
    /// connect and request, at the rate the retired one showed. Regions are weighed at
    /// the rate they moved since the last look (`lagLookInterval` ago at least), not
    /// their request's average: a connection that slowed after a fast start kept a
    /// high average long enough that, on a loaded machine, the steal never paid and
    /// the tail crawled for 7 s.
    private mutating func lagging(
        in snapshot: Snapshot, book: inout SegmentBook, canConnectNext: () -> Bool
    ) -> ByteRange? {
        let now = snapshot.now
        guard snapshot.fannedOut, snapshot.spare, book.unowned == 0, snapshot.hasLiveSource, canConnectNext()
        else { return nil }
        let previous = lastLook
        guard now - previous.at >= Self.lagLookInterval else { return nil }
        let positions = snapshot.connections.map { ($0.slot, $0.position) }
        lastLook = (now, Dictionary(uniqueKeysWithValues: positions))
        var rates: [Int: Double] = [:]
        for (slot, position) in positions {
            guard let before = previous.positions[slot], position >= before else { return nil }
            rates[slot] = Double(position - before) / (now - previous.at)
        }
        guard let slowest = rates.values.min(), slowest > 0, Self.lagFactor * slowest < fastestRetired else { return nil }
        // Cut for the connection hired next; a steal that does not pay hires no one.
        rates[snapshot.nextSlot] = fastestRetired
        return book.stealFinishingTogether(
            for: snapshot.nextSlot, rates: rates, latency: Self.newConnectionRoundTrips * snapshot.roundTrip)
    }

    /// `connection` holds bytes it is not fetching: its request brought nothing for
    /// `stallAfter`, or it waits longer than that to retry (a long `Retry-After`
    /// answered to one request while the item's other connections were served).
    private func isStalled(_ connection: Connection, in snapshot: Snapshot, book: SegmentBook) -> Bool {
        switch connection.phase {
        case .active: connection.inFlight && connection.rate(now: snapshot.now, stallAfter: snapshot.stallAfter) == 0
        case .backoff(let until):
            until - snapshot.now > snapshot.stallAfter && (book.region(of: connection.slot)?.remaining ?? 0) > 0
        case .ready: false
        }
    }

    /// When a waiting connection next needs a look, if before `limit`: a retry's
    /// delay running out, or `slotLookInterval` for one waiting for a slot.
    static func nextLook(_ phases: some Sequence<Connection.Phase>, now: Double, before limit: Double) -> Double {
        var deadline = limit
        for phase in phases {
            if case .backoff(let until) = phase { deadline = min(deadline, until) }
            if case .ready = phase { deadline = min(deadline, now + slotLookInterval) }
        }
        return deadline
    }
}
