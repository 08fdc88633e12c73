import PropertyBased
import Testing

@testable import JGMirror

/// `CrewPolicy`'s triggers in virtual time: every snapshot is made up, `now` included.
@Suite struct CrewPolicyTests {
    private let mib: Int64 = 1 << 20

    /// A connection streaming at `rate` since `since`, its last byte at `lastByte`.
    private func streaming(
        _ slot: Int, rate: Double, since: Double = 0, lastByte: Double, source: Int = 0, position: Int64 = 0
    ) -> CrewPolicy.Connection {
        CrewPolicy.Connection(
            slot: slot, phase: .active, inFlight: true, source: source, position: position, sentAt: since,
            firstByteAt: since, lastByteAt: lastByte, requestBytes: Int64(rate * (lastByte - since)), previousRate: nil)
    }

    /// A connection whose request ended at `now` after delivering at `rate`.
    private func done(_ slot: Int, rate: Double, now: Double, truncated: Bool = false) -> CrewPolicy.Connection {
        var connection = streaming(slot, rate: rate, lastByte: now)
        connection.inFlight = false
        connection.truncated = truncated
        return connection
    }

    /// Two connections over 8 mib: 0 fetched its 4 mib, 1 has `left` of its own.
    private func twoRegions(left: Int64, minSegment: Int64 = 1 << 20) -> SegmentBook {
        var book = SegmentBook(length: 8 * mib, connections: 2, minSegment: minSegment)
        _ = book.take(for: 0)
        _ = book.take(for: 1)
        _ = book.record(0, at: 0, count: 4 * mib)
        _ = book.record(1, at: 4 * mib, count: 4 * mib - left)
        return book
    }

    // MARK: Rates and stalls

    @Test func aRateCountsAfterItsWindowAndFallsToZeroAfterTheStallTime() {
        var connection = streaming(0, rate: 1e6, since: 10, lastByte: 10.04)
        connection.previousRate = 5e5
        // 40 ms of bytes: the previous request's rate stands in.
        #expect(connection.rate(now: 10.04, stallAfter: 1) == 5e5)
        connection.lastByteAt = 10.5
        connection.requestBytes = 500_000
        #expect(connection.rate(now: 10.5, stallAfter: 1) == 1e6)
        #expect(connection.rate(now: 11.4, stallAfter: 1) != 0)
        #expect(connection.rate(now: 11.6, stallAfter: 1) == 0)
        connection.phase = .backoff(until: 20)
        #expect(connection.rate(now: 10.5, stallAfter: 1) == 0)
    }

    @Test func theStallTimeIsFourRoundTripsButAtLeastASecondAndNeverUnderARateLimit() {
        func stallAfter(_ roundTrip: Double, limited: Bool = false) -> Double {
            CrewPolicy.Snapshot(connections: [], roundTrip: roundTrip, now: 0, rateLimited: limited, limit: 4, nextSlot: 0)
                .stallAfter
        }
        #expect(stallAfter(0) == 1)
        #expect(stallAfter(0.2) == 1)
        #expect(stallAfter(0.5) == 2)
        #expect(stallAfter(0.5, limited: true) == .infinity)
    }

    // MARK: Work for a connection whose region is done

    @Test func workComesFromThePoolFirst() {
        var book = SegmentBook(length: 8 * mib, connections: 2, minSegment: mib)
        let snapshot = CrewPolicy.Snapshot(connections: [], roundTrip: 0.01, now: 0, limit: 2, nextSlot: 0)
        #expect(CrewPolicy().work(for: 0, in: snapshot, book: &book) == .take(ByteRange(lower: 0, upper: 4 * mib)))
    }

    @Test func aThiefWhoseConnectionClosedWeighsTwoRoundTrips() {
        // 1.5 mib left at 4 MB/s (0.39 s), lagging a thief that moved at 16 MB/s: a thief
        // 0.3 s away on an open connection still finishes sooner with a split; one that
        // must connect first (0.6 s) does not.
        let now = 5.0
        let victim = streaming(1, rate: 4e6, lastByte: now)
        var open = twoRegions(left: 3 * mib / 2, minSegment: 64 << 10)
        var closed = open
        let policy = CrewPolicy()
        func snapshot(truncated: Bool) -> CrewPolicy.Snapshot {
            CrewPolicy.Snapshot(
                connections: [done(0, rate: 16e6, now: now, truncated: truncated), victim], roundTrip: 0.3, now: now,
                limit: 2, nextSlot: 2)
        }
        guard case .steal(let range, dropping: nil) = policy.work(for: 0, in: snapshot(truncated: false), book: &open) else {
            Issue.record("no steal on an open connection")
            return
        }
        #expect(range.upper == 8 * mib && open.region(of: 1)?.end == range.lower)
        #expect(policy.work(for: 0, in: snapshot(truncated: true), book: &closed) == nil)
        #expect(closed.region(of: 1)?.end == 8 * mib)
    }

    @Test func aVictimSilentForTheStallTimeIsStolenWhollyAndDropped() {
        let roundTrip = 0.1  // stall after 1 s
        let victim = streaming(1, rate: 4e6, lastByte: 2)
        for (now, dropped) in [(2.9, false), (3.1, true)] {
            var book = twoRegions(left: 2 * mib)
            let snapshot = CrewPolicy.Snapshot(
                connections: [done(0, rate: 16e6, now: now), victim], roundTrip: roundTrip, now: now, limit: 2,
                nextSlot: 2)
            let work = CrewPolicy().work(for: 0, in: snapshot, book: &book)
            if dropped {
                #expect(work == .steal(ByteRange(lower: 6 * mib, upper: 8 * mib), dropping: 1))
            } else if case .steal(let range, dropping: nil) = work {
                #expect(range.lower > 6 * mib)
            } else {
                Issue.record("expected a split with a moving victim at \(now), got \(String(describing: work))")
            }
        }
    }

    @Test func aMovingVictimIsCutOnlyWhenItLagsOrTheStealIsLarge() {
        // 8 mib left at 4 MB/s (2 s): a thief that moved at 5 MB/s could save a second
        // by a split, but the victim moves at most four times slower, and the piece it
        // would take is small next to what a cut wastes: the thief retires, the victim
        // keeps its request to its end (docs/engine.md#politeness).
        let now = 5.0
        var book = SegmentBook(length: 16 * mib, connections: 2, minSegment: mib)
        _ = book.take(for: 0)
        _ = book.take(for: 1)
        _ = book.record(0, at: 0, count: 8 * mib)
        let healthy = CrewPolicy.Snapshot(
            connections: [done(0, rate: 5e6, now: now), streaming(1, rate: 4e6, lastByte: now)], roundTrip: 0.01, now: now,
            limit: 2, nextSlot: 2)
        var kept = book
        #expect(CrewPolicy().work(for: 0, in: healthy, book: &kept) == nil)
        #expect(kept.region(of: 1)?.end == 16 * mib)
        // Four times slower: it lags, and is cut.
        var lagging = healthy
        lagging.connections[1] = streaming(1, rate: 1e6, lastByte: now)
        guard case .steal = CrewPolicy().work(for: 0, in: lagging, book: &book) else {
            Issue.record("a lagging victim was not cut")
            return
        }
        #expect(CrewPolicy.mayCut(victimRate: 4e6, thiefRate: 5e6, taken: CrewPolicy.politeSteal))
        #expect(!CrewPolicy.mayCut(victimRate: 4e6, thiefRate: 5e6, taken: CrewPolicy.politeSteal - 1))
    }

    // MARK: Replacing a stalled connection

    @Test func aStalledConnectionIsReplacedOnAnotherSourceOncePerProgress() {
        // Connection 1 (source 1) went silent at 2 s; connection 0 still streams.
        var book = twoRegions(left: 2 * mib)
        _ = book.record(0, at: 4 * mib, count: 0)
        var policy = CrewPolicy()
        func snapshot(now: Double, progress: Int64, limit: Int = 3) -> CrewPolicy.Snapshot {
            CrewPolicy.Snapshot(
                connections: [
                    streaming(0, rate: 4e6, lastByte: now, source: 0), streaming(1, rate: 4e6, lastByte: 2, source: 1),
                ], roundTrip: 0.05, now: now, limit: limit, nextSlot: 2, progress: progress)
        }
        // Not yet stalled, no connection to spare, or no progress: nobody.
        #expect(policy.replacement(in: snapshot(now: 2.9, progress: 10), book: &book, canConnectNext: { true }) == nil)
        #expect(policy.replacement(in: snapshot(now: 3.5, progress: 10, limit: 2), book: &book, canConnectNext: { true }) == nil)
        #expect(policy.replacement(in: snapshot(now: 3.5, progress: 0), book: &book, canConnectNext: { true }) == nil)
        let replacement = policy.replacement(in: snapshot(now: 3.5, progress: 10), book: &book, canConnectNext: { true })
        #expect(replacement == .stalled(avoiding: [1], work: .steal(ByteRange(lower: 6 * mib, upper: 8 * mib), dropping: 1)))
        #expect(book.region(of: 2) == .init(start: 6 * mib, next: 6 * mib, end: 8 * mib))
        // The same progress does not bring a second one.
        #expect(policy.progressAtReplacement == 10)
    }

    @Test func aLongRetryDelayOverARegionCountsAsAStall() {
        var book = twoRegions(left: 2 * mib)
        var waiting = streaming(1, rate: 4e6, lastByte: 2)
        waiting.inFlight = false
        var policy = CrewPolicy()
        for (until, replaced) in [(3.5, false), (30.0, true)] {
            waiting.phase = .backoff(until: until)
            let snapshot = CrewPolicy.Snapshot(
                connections: [streaming(0, rate: 4e6, lastByte: 2.5), waiting], roundTrip: 0.05, now: 2.5, limit: 3,
                nextSlot: 2, progress: 10)
            #expect((policy.replacement(in: snapshot, book: &book, canConnectNext: { true }) != nil) == replaced)
        }
    }

    // MARK: Replacing a lagging region

    @Test func aRegionFourTimesSlowerThanARetiredConnectionGetsAThiefAtTheSecondLook() {
        // 16 mib over 3: connection 2 retired at 8 MB/s; 0 moves at 4 MB/s, 1 at 1 MB/s.
        var book = SegmentBook(length: 16 * mib, connections: 3, minSegment: mib)
        _ = book.take(for: 0)
        _ = book.take(for: 1)
        _ = book.take(for: 2)
        _ = book.record(2, at: book.region(of: 2)!.start, count: book.region(of: 2)!.remaining)
        book.giveBack(2)
        var policy = CrewPolicy()
        policy.retired(shownRate: 8e6)
        let start1 = book.region(of: 1)!.start
        func snapshot(now: Double, limit: Int = 3) -> CrewPolicy.Snapshot {
            CrewPolicy.Snapshot(
                connections: [
                    streaming(0, rate: 4e6, lastByte: now, position: Int64(4e6 * now)),
                    streaming(1, rate: 1e6, lastByte: now, position: start1 + Int64(1e6 * now)),
                ], roundTrip: 0.01, now: now, limit: limit, nextSlot: 3)
        }
        // The first look only notes where each stands; the next within 0.1 s is skipped.
        #expect(policy.replacement(in: snapshot(now: 1.0), book: &book, canConnectNext: { true }) == nil)
        #expect(policy.replacement(in: snapshot(now: 1.05), book: &book, canConnectNext: { true }) == nil)
        // No slot free at the source: no thief (and no look).
        #expect(policy.replacement(in: snapshot(now: 1.2), book: &book, canConnectNext: { false }) == nil)
        guard case .lagging(let range) = policy.replacement(in: snapshot(now: 1.2), book: &book, canConnectNext: { true }) else {
            Issue.record("no thief for the lagging region")
            return
        }
        #expect(range.upper == book.region(of: 3)?.end && book.region(of: 1)?.end == range.lower)
        // A retired connection only twice as fast as the slowest brings no thief.
        var modest = CrewPolicy()
        modest.retired(shownRate: 2e6)
        var other = book
        _ = modest.replacement(in: snapshot(now: 2.0), book: &other, canConnectNext: { true })
        #expect(modest.replacement(in: snapshot(now: 2.2), book: &other, canConnectNext: { true }) == nil)
    }

    // MARK: A range given back

    @Test func aRangeGivenBackIsTakenByANewConnectionOncePerProgress() {
        var book = twoRegions(left: 2 * mib)
        book.giveBack(1)
        var policy = CrewPolicy()
        let snapshot = CrewPolicy.Snapshot(
            connections: [done(0, rate: 1e6, now: 1)], roundTrip: 0.01, now: 1, limit: 2, nextSlot: 2, progress: 5)
        // An equal share of the 2 mib given back over the two idle connections.
        #expect(policy.strandedTake(in: snapshot, book: &book) == ByteRange(lower: 6 * mib, upper: 7 * mib))
        book.giveBack(2)
        #expect(policy.strandedTake(in: snapshot, book: &book) == nil)
    }

    // MARK: Waiting workers

    @Test func aWorkerWaitingForASlotIsLookedAtEveryFiftyMilliseconds() {
        #expect(CrewPolicy.nextLook([.ready], now: 1, before: 9) == 1.05)
        #expect(CrewPolicy.nextLook([.ready, .backoff(until: 1.01)], now: 1, before: 9) == 1.01)
        #expect(CrewPolicy.nextLook([.active, .backoff(until: 4)], now: 1, before: 3) == 3)
    }

    // MARK: Properties

    /// Whatever the rates, silences and round trip, dealing work never hands a byte to
    /// two connections, a steal takes the back of one region, and a connection counts
    /// as stalled exactly when silent for longer than the stall time.
    @Test func workIsDealtWithoutOverlapAndStallsFollowTheStallTime() async {
        await propertyCheck(
            count: 200, input: Gen.int(in: 0...1000), Gen.int(in: 1...4000).array(of: 3...3),
            Gen.int(in: 0...3000).array(of: 3...3)
        ) { rttMillis, kbps, silenceMillis in
            let roundTrip = Double(rttMillis) / 1000
            let now = 100.0
            var book = SegmentBook(length: 48 * mib, connections: 4, minSegment: mib)
            var connections: [CrewPolicy.Connection] = []
            for slot in 0..<3 {
                let range = book.take(for: slot)!
                _ = book.record(slot, at: range.lower, count: Int64(kbps[slot]) * 1024)
                let lastByte = now - Double(silenceMillis[slot]) / 1000
                connections.append(streaming(slot, rate: Double(kbps[slot]) * 1000, since: 90, lastByte: lastByte))
            }
            _ = book.take(for: 3)
            _ = book.record(3, at: 36 * mib, count: 12 * mib)
            connections.append(done(3, rate: 4e6, now: now))
            let snapshot = CrewPolicy.Snapshot(
                connections: connections, roundTrip: roundTrip, now: now, limit: 4, nextSlot: 4)
            for connection in connections.prefix(3) {
                let silent = now - connection.lastByteAt > snapshot.stallAfter
                #expect((connection.rate(now: now, stallAfter: snapshot.stallAfter) == 0) == silent)
            }
            let before = book
            let work = CrewPolicy().work(for: 3, in: snapshot, book: &book)
            #expect(book.missing == before.missing)
            guard case .steal(let range, let dropping) = work else {
                #expect(work == nil)
                return
            }
            // One victim, cut where the thief starts; what the thief did not take of
            // the back returns to the pool.
            let victims = (0..<3).filter { before.region(of: $0)?.end != book.region(of: $0)?.end }
            #expect(victims.count == 1)
            if let victim = victims.first, let was = before.region(of: victim) {
                #expect(book.region(of: victim)?.end == range.lower)
                #expect(range.lower >= was.next && range.upper <= was.end)
                #expect(book.pool == before.pool + (range.upper < was.end ? [ByteRange(lower: range.upper, upper: was.end)] : []))
                #expect((dropping == victim) == (book.region(of: victim)?.remaining == 0))
            }
        }
    }
}
