/// The connections of one item and the work dealt to them (SPEC §5): the workers,
/// the `SegmentBook` they share, what the link has shown of its round trips, and who
/// fetches what next: the fan-out once the file is known, the next range of a
/// connection whose region is done (from the pool, else a steal cut so both finish
/// together), and a new connection for a range given back or held by a stalled one.
/// It deals the work; `RequestCycle` sends the requests.
///
/// Confined to the engine thread.
final class Crew {
    unowned let item: ItemTransfer
    private var engine: TransferEngine { item.engine }
    private let connections: Int
    private let minSegment: Int64

    private(set) var workers: [Worker] = []
    private var nextSlot = 0
    /// The byte ranges, once the length is known (from a response or resume state).
    var book: SegmentBook?
    /// The server honours ranges, so the book is shared out in regions.
    var rangesSupported = false
    /// Sources that answered with a permanent error (404, …); no new worker starts there.
    private(set) var deadSources = Set<Int>()
    /// The item's progress (bytes of this run) when a worker last replaced another: a
    /// new replacement needs progress since, so an item whose every request fails ends.
    private var progressAtReplacement: Int64 = 0
    /// The fastest rate a retired connection showed (`replaceLagging`).
    private var fastestRetired = 0.0
    /// When `replaceLagging` last looked, and where each connection stood then.
    private var lastLook: (at: Double, positions: [Int: Int64]) = (0, [:])

    /// The connections were fanned out once the file was known; later, only a range
    /// given back or a stall brings a new one.
    private(set) var fannedOut = false
    private var fannedOutAt = -Double.infinity
    /// The shortest request-to-first-byte time seen: requests that waited behind
    /// others in libcurl's loop would overstate the round trip.
    private var minRoundTrip = Double.infinity
    /// Seconds from the item's first request to its first response byte, connecting
    /// (and TLS) included: about when the warm-ups sent with it are answered.
    private var firstHeadAfter: Double?

    init(item: ItemTransfer, connections: Int, minSegment: Int64) {
        self.item = item
        self.connections = connections
        self.minSegment = minSegment
    }

    // MARK: The link

    /// Notes what a response head shows of the link: its request's wait for the first
    /// byte, and the time from start to first byte with connecting included.
    func noteHead(firstByteWait: Double, sinceStart: Double) {
        if firstByteWait > 0 { minRoundTrip = min(minRoundTrip, firstByteWait) }
        if firstHeadAfter == nil { firstHeadAfter = sinceStart }
    }

    /// The shortest round trip seen, 0 before any.
    var roundTrip: Double { minRoundTrip.isFinite ? minRoundTrip : 0 }

    /// Seconds without a byte after which a connection counts as stalled: its rate is
    /// 0 and its region is taken over. Never while `--limit-rate` pauses connections.
    var stallAfter: Double { engine.rateLimited ? .infinity : max(1, 4 * roundTrip) }

    /// Until when a region waits for a warm-up under way rather than open a connection
    /// (`TransferEngine.acquireHost`): after the fan-out, as long as the first request
    /// took to its head (the warm-ups left with it), at least a round trip.
    var warmUntil: Double { fannedOutAt + max(roundTrip, firstHeadAfter ?? 0) }

    /// A book for a file of `length` bytes, its regions capped for the round trip seen.
    func makeBook(length: Int64, missing: [ByteRange]? = nil) -> SegmentBook {
        var book = SegmentBook(length: length, missing: missing, connections: connections, minSegment: minSegment)
        book.regionCap = SegmentBook.regionCap(
            length: length, connections: connections, roundTrip: minRoundTrip, hashRate: engine.configuration.hashRate)
        return book
    }

    /// Recuts regions dealt before any response showed the round trip (from the
    /// manifest's size) as `makeBook` would have cut them (`SegmentBook.recap`).
    func recap() {
        guard let length = book?.length,
            let cap = SegmentBook.regionCap(
                length: length, connections: connections, roundTrip: minRoundTrip, hashRate: engine.configuration.hashRate)
        else { return }
        book?.recap(cap)
    }

    // MARK: Workers

    /// A new worker, not yet sent anywhere.
    func hire() -> Worker {
        let worker = Worker(item: item, slot: nextSlot, retries: item.request.retries)
        nextSlot += 1
        workers.append(worker)
        return worker
    }

    /// Removes a worker; what it still owned returns to the book's pool.
    func retire(_ worker: Worker) {
        fastestRetired = max(fastestRetired, worker.shownRate ?? 0)
        workers.removeAll { $0 === worker }
        book?.giveBack(worker.slot)
    }

    /// Keeps only `stream` (none when nil), and forgets the file: the item starts over.
    func startOver(keeping stream: Worker?) {
        workers = stream.map { [$0] } ?? []
        fannedOut = false
        book = nil
        rangesSupported = false
    }

    func markDead(_ source: Int) { deadSources.insert(source) }

    /// Connections with a request in flight.
    var activeCount: Int { workers.count(where: { if case .active = $0.state { true } else { false } }) }

    /// Workers whose wait may be over at `now`: those waiting for a connection slot
    /// (worth another look each time), and those whose retry delay ran out.
    /// The crew is taken as it stands now (workers hired or retired while the caller
    /// goes through them are not added or dropped); each worker's wait is looked at
    /// when the caller reaches it.
    func doneWaiting(now: Double) -> LazyFilterSequence<[Worker]> {
        workers.lazy.filter { worker in
            switch worker.state {
            case .ready: true
            case .backoff(let until): until <= now
            case .active: false
            }
        }
    }

    /// The soonest moment a waiting worker needs a look (`doneWaiting`), if before
    /// `limit`: a retry's delay running out, or, for a worker waiting for a slot, the
    /// end of the warm-ups' wait or 50 ms, whichever comes first.
    func nextLook(now: Double, before limit: Double) -> Double {
        var deadline = limit
        for worker in workers {
            if case .backoff(let until) = worker.state { deadline = min(deadline, until) }
            if case .ready = worker.state { deadline = min(deadline, now + 0.05, max(now, warmUntil)) }
        }
        return deadline
    }

    /// Sources that have not answered with a permanent error.
    var liveSources: [Int] { item.request.sources.indices.filter { !deadSources.contains($0) } }

    /// The file is shared out by ranges and steals have left `worker` nothing to
    /// fetch (or it finished its region): its next request needs new work.
    func owesNothing(_ worker: Worker) -> Bool {
        guard let book, rangesSupported else { return false }
        return (book.region(of: worker.slot)?.remaining ?? 0) == 0
    }

    // MARK: Dealing work

    /// While the first request learns the length, has the engine open the connections
    /// the regions will use (`TransferEngine.warmUp`), each source its share of them;
    /// not when the item will not fan out (one connection, fewer missing bytes than two
    /// regions), nor for a conditional request, which most often ends in a `304`.
    func warmUp() {
        let request = item.request
        let missing = book?.remaining ?? request.expectedSize ?? .max
        guard connections > 1, request.conditions.isEmpty, missing >= 2 * minSegment else { return }
        let sources = request.sources.count
        for (index, url) in request.sources.enumerated() where index < connections {
            // Worker slot s goes to source s % sources (`spawn`).
            engine.warmUp(url, connections: (connections - index + sources - 1) / sources, for: request)
        }
    }

    /// A whole-body response from byte 0 becomes the worker's region: the first
    /// region when ranges let others share the file, else all of it.
    func adoptStream(_ worker: Worker) {
        guard let length = book?.length, length > 0 else { return }
        if rangesSupported {
            _ = book?.take(for: worker.slot)
        } else {
            _ = book?.claim(ByteRange(lower: 0, upper: length), for: worker.slot)
        }
    }

    /// Whether `fanOut()` would hire anyone now: a file of one region (a small one)
    /// gives no other connection work.
    var wouldHire: Bool { rangesSupported && book != nil && !fannedOut && workers.count < connections && (book?.unowned ?? 0) > 0 }

    /// Workers for the missing bytes, up to `connections`, each to ask once for a
    /// region of the book (SPEC §5), spread over the sources still alive.
    func fanOut() -> [Worker] {
        guard rangesSupported, book != nil, !fannedOut else { return [] }
        fannedOut = true
        fannedOutAt = engine.now()
        var hired: [Worker] = []
        while workers.count < connections, (book?.unowned ?? 0) > 0, let worker = spawn(taking: { self.book?.take(for: $0.slot) }) {
            hired.append(worker)
        }
        return hired
    }

    /// New work for a worker whose region is done: the front of the pool, else the
    /// back of the region that will finish last at the rates the connections show
    /// now, cut so that both finish together (SPEC §5). The thief waits a round trip
    /// for its first byte, two when its request was cut short and closed its
    /// connection; a steal happens only when it still finishes sooner.
    func nextRange(for worker: Worker) -> ByteRange? {
        if let range = book?.take(for: worker.slot) { return range }
        let weights = StealWeights(workers, now: engine.now(), stallAfter: stallAfter, roundTrip: roundTrip)
        let latency = roundTrip * (worker.truncated ? 2 : 1)
        guard
            let range = book?.stealFinishingTogether(
                for: worker.slot, rates: weights.rates, startsIn: weights.startsIn, latency: latency)
        else { return nil }
        // A stalled victim kept nothing: its request is dropped rather than waited for.
        if let victim = workers.first(where: { $0 !== worker && $0.easy != nil && book?.region(of: $0.slot)?.end == range.lower }),
            book?.region(of: victim.slot)?.remaining == 0
        {
            engine.detach(victim)
            victim.easy = nil
            retire(victim)
        }
        return range
    }

    /// A range given back must be taken again before the item can fail (SPEC §5):
    /// live workers take it when their own region ends; with a connection to spare,
    /// a new worker takes it now, if the item made `progress` since the last
    /// replacement.
    func replaceStranded(progress: Int64) -> Worker? {
        guard rangesSupported, (book?.unowned ?? 0) > 0, workers.count < connections, progress > progressAtReplacement,
            !liveSources.isEmpty
        else { return nil }
        progressAtReplacement = progress
        return spawn { self.book?.take(for: $0.slot) }
    }

    /// A connection that stalled hands its region to a new one, without waiting for
    /// its timeout, when the item has a connection to spare and made `progress` since
    /// the last replacement (so an origin that stalls every connection still ends).
    func replaceStalled(progress: Int64) -> Worker? {
        let now = engine.now()
        guard rangesSupported, fannedOut, workers.count < connections, progress > progressAtReplacement else { return nil }
        let stalled = workers.filter { isStalled($0, now: now) }
        // The new connection goes to another source when there is one: the stalled
        // one's may stall it too.
        guard !stalled.isEmpty, let worker = spawn(avoiding: Set(stalled.map(\.sourceIndex)), taking: nextRange) else { return nil }
        progressAtReplacement = progress
        return worker
    }

    /// A connection whose region ends declines a steal that does not pay at the rates
    /// it sees then, and retires; a victim that has not shown its rate yet counts at
    /// the others' mean, so a connection 160 times slower than the rest could keep its
    /// whole region (seen once in about 13 loaded test runs: 2 MiB at 50 kB/s, 44 s).
    /// Each tick looks again: with a connection to spare, every region moving, one of
    /// them at under a quarter of the fastest rate a retired connection showed, and
    /// none unowned, a new worker steals when finishing together pays for its connect
    /// and request (two round trips), at the rate the retired one showed. The regions
    /// are weighed at the rate they moved since the last look (at least 0.1 s ago), not
    /// their request's average: a connection that slowed down after a fast start kept
    /// a high average long enough that, on a loaded machine (longer round trips), the
    /// steal never paid and the tail crawled for 7 s.
    ///
    /// `canConnect` says whether a source's host has a connection slot free now: a
    /// thief that would wait for one would hold the region it cut, and the victim
    /// would take it back when it reached the cut.
    func replaceLagging(canConnect: (Int) -> Bool) -> Worker? {
        let now = engine.now()
        let live = liveSources
        guard rangesSupported, fannedOut, workers.count < connections, (book?.unowned ?? 1) == 0, !live.isEmpty,
            canConnect(source(forSlot: nextSlot, among: live))
        else { return nil }
        let previous = lastLook
        guard now - previous.at >= 0.1 else { return nil }
        lastLook = (now, Dictionary(uniqueKeysWithValues: workers.map { ($0.slot, $0.pos) }))
        var rates: [Int: Double] = [:]
        for worker in workers {
            guard let before = previous.positions[worker.slot], worker.pos >= before else { return nil }
            rates[worker.slot] = Double(worker.pos - before) / (now - previous.at)
        }
        guard let slowest = rates.values.min(), slowest > 0, 4 * slowest < fastestRetired else { return nil }
        // Cut for the worker `spawn` hires next (it takes slot `nextSlot`); a steal that
        // does not pay hires no one.
        rates[nextSlot] = fastestRetired
        guard let range = book?.stealFinishingTogether(for: nextSlot, rates: rates, latency: 2 * roundTrip) else { return nil }
        return spawn { _ in range }
    }

    /// `worker` holds bytes it is not fetching: its request brought nothing for
    /// `stallAfter`, or it waits longer than that to retry (a long `Retry-After` answered
    /// to one request while the item's other connections were served).
    private func isStalled(_ worker: Worker, now: Double) -> Bool {
        switch worker.state {
        case .active: worker.easy != nil && worker.rate(now: now, stallAfter: stallAfter) == 0
        case .backoff(let until): until - now > stallAfter && !owesNothing(worker)
        case .ready: false
        }
    }

    /// A new worker on a live source (chosen by `source(forSlot:among:)`, among those
    /// not in `avoiding` while any is left) at the start of the range `take` gives it;
    /// nil, and no worker, when it gives none or no source is live.
    private func spawn(avoiding: Set<Int> = [], taking take: (Worker) -> ByteRange?) -> Worker? {
        var live = liveSources
        guard !live.isEmpty else { return nil }
        if live.contains(where: { !avoiding.contains($0) }) { live.removeAll { avoiding.contains($0) } }
        let worker = hire()
        worker.sourceIndex = source(forSlot: worker.slot, among: live)
        guard let range = take(worker) else {
            workers.removeAll { $0 === worker }
            return nil
        }
        worker.pos = range.lower
        return worker
    }
}
