/// The connections of one item and the work dealt to them (docs/engine.md#work-stealing): the
/// workers, the `SegmentBook` they share, what the link has shown of its round trips, the
/// fan-out once the file is known. Who fetches what next (the next
/// range of a connection whose region is done, a new connection for a range given
/// back, a stalled or a lagging one) is `CrewPolicy`'s to decide, from a snapshot of
/// the crew; `Crew` carries its answers out, and `RequestCycle` sends the requests.
///
/// The engine thread's: `ItemTransfer.crew` is `EngineBound`, so every reach of the
/// crew from its item is checked in debug builds, and its workers' fields are too.
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
    /// Who fetches what next; `Crew` carries out its answers.
    private var policy = CrewPolicy()

    /// The connections were fanned out once the file was known; later, only a range
    /// given back or a stall brings a new one.
    private(set) var fannedOut = false
    /// The shortest request-to-first-byte time seen: requests that waited behind
    /// others in libcurl's loop would overstate the round trip.
    private var minRoundTrip = Double.infinity

    init(item: ItemTransfer, connections: Int, minSegment: Int64) {
        self.item = item
        self.connections = connections
        self.minSegment = minSegment
    }

    // MARK: The link

    /// Notes what a response head shows of the link: its request's wait for the first
    /// byte.
    func noteHead(firstByteWait: Double) {
        if firstByteWait > 0 { minRoundTrip = min(minRoundTrip, firstByteWait) }
    }

    /// The shortest round trip seen, 0 before any.
    var roundTrip: Double { minRoundTrip.isFinite ? minRoundTrip : 0 }

    /// The crew as the policy weighs it at `now`.
    private func snapshot(now: Double, progress: Int64 = 0) -> CrewPolicy.Snapshot {
        CrewPolicy.Snapshot(
            connections: workers.map(\.connection), roundTrip: roundTrip, now: now, rateLimited: engine.rateLimited,
            limit: connections, nextSlot: nextSlot, fannedOut: fannedOut, progress: progress,
            hasLiveSource: !liveSources.isEmpty)
    }

    /// A book for a file of `length` bytes: one region per connection, so that each
    /// asks once (docs/engine.md#politeness).
    func makeBook(length: Int64, missing: [ByteRange]? = nil) -> SegmentBook {
        SegmentBook(length: length, missing: missing, connections: connections, minSegment: minSegment)
    }

    // MARK: Workers

    /// A new worker, not yet sent anywhere.
    func hire() -> Worker {
        let worker = Worker(item: item, slot: nextSlot, retries: item.request.options.retries)
        nextSlot += 1
        workers.append(worker)
        return worker
    }

    /// Removes a worker; what it still owned returns to the book's pool.
    func retire(_ worker: Worker) {
        policy.retired(shownRate: worker.shownRate)
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
    /// `limit` (`CrewPolicy.nextLook`).
    func nextLook(now: Double, before limit: Double) -> Double {
        CrewPolicy.nextLook(workers.lazy.map(\.phase), now: now, before: limit)
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
    var wouldHire: Bool {
        rangesSupported && book != nil && !fannedOut && workers.count < connections && (book?.unowned ?? 0) > 0
    }

    /// Workers for the missing bytes, up to `connections`, each to ask once for a
    /// region of the book (docs/engine.md#work-stealing), spread over the sources still alive.
    func fanOut() -> [Worker] {
        guard rangesSupported, book != nil, !fannedOut else { return [] }
        fannedOut = true
        var hired: [Worker] = []
        while workers.count < connections, (book?.unowned ?? 0) > 0, let worker = spawn(taking: { self.book?.take(for: $0.slot) })
        {
            hired.append(worker)
        }
        return hired
    }

    /// New work for a worker whose region is done (`CrewPolicy.work`); a stalled
    /// victim left with nothing is dropped. Nil: the worker retires.
    func nextRange(for worker: Worker) -> ByteRange? {
        guard book != nil else { return nil }
        let work = policy.work(for: worker.slot, in: snapshot(now: engine.now()), book: &book!)
        return work.map(carryOut)
    }

    /// Drops the victim a steal left with nothing, which counts as an attempt as a
    /// stalled connection's replacement does; returns the range to fetch.
    private func carryOut(_ work: CrewPolicy.Work) -> ByteRange {
        if case .steal(_, let dropping?) = work, let victim = workers.first(where: { $0.slot == dropping }) {
            engine.detach(victim)
            victim.easy = nil
            retire(victim)
            item.tally.attempts += 1
        }
        return work.range
    }

    /// A range given back must be taken again before the item can fail (docs/engine.md#retries):
    /// live workers take it when their own region ends; with a connection to spare,
    /// a new worker takes it now, if the item made `progress` since the last
    /// replacement (`CrewPolicy.strandedTake`).
    func replaceStranded(progress: Int64) -> Worker? {
        guard rangesSupported, book != nil else { return nil }
        let range = policy.strandedTake(in: snapshot(now: engine.now(), progress: progress), book: &book!)
        return range.flatMap { range in spawn { _ in range } }
    }

    /// A new connection for a stalled one, without waiting for its timeout, or for a
    /// lagging region (`CrewPolicy.replacement`). `canConnect` says whether a source's
    /// host has a connection slot free now: a thief that would wait for one would
    /// hold the region it cut, and the victim would take it back when it reached the cut.
    func replace(progress: Int64, canConnect: (Int) -> Bool) -> (worker: Worker, stalled: Bool)? {
        // Both need a fanned-out crew with a connection to spare: looked at before the
        // snapshot is taken, on every tick of every item.
        guard rangesSupported, fannedOut, workers.count < connections, book != nil else { return nil }
        let live = liveSources
        let next = nextSlot
        let replacement = policy.replacement(in: snapshot(now: engine.now(), progress: progress), book: &book!) {
            !live.isEmpty && canConnect(self.source(forSlot: next, among: live))
        }
        switch replacement {
        case nil: return nil
        case .stalled(let avoiding, let work):
            // The new connection goes to another source when there is one: the stalled
            // one's may stall it too.
            return spawn(avoiding: avoiding) { _ in self.carryOut(work) }.map { ($0, true) }
        case .lagging(let range):
            return spawn { _ in range }.map { ($0, false) }
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
