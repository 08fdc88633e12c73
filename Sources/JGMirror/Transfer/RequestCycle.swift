import CCurl

/// The requests of one item's connections (docs/engine.md#connections-and-ranges): sends each
/// worker's next request — the rest of its region, or the whole file before the length is known —
/// follows redirects, and carries out `RequestEnd`'s verdict on every request that
/// ended and `RetryPolicy`'s on every failure: ask for the rest, take new work from
/// the `Crew`, wait to retry, move to a mirror, or retire.
///
/// Holds no state of its own: what it reads and changes is its item's, its crew's and
/// its workers', each access checked on the engine thread (`EngineBound`); failing the
/// item and deciding that it is complete stay the item's.
final class RequestCycle {
    private unowned let item: ItemTransfer
    private var engine: TransferEngine { item.engine }
    private var request: TransferRequest { item.request }
    private var crew: Crew { item.crew }

    init(item: ItemTransfer) { self.item = item }

    /// Starts the worker's next request, for the rest of its region (or, before the
    /// length is known, the whole file), if its host has a free slot; otherwise it waits.
    func launch(_ worker: Worker) {
        worker.resetRequest()
        worker.sentAt = engine.now()
        let url = worker.redirectURL ?? item.remote.url(of: worker.sourceIndex)
        let host = Origin.key(url)
        guard engine.acquireHost(host) else {
            worker.state = .ready
            return
        }
        guard item.isFileSource || hostAllows(worker, url: url) else {
            engine.releaseHost(host)
            return
        }
        let book = crew.book
        let shape = RequestBuilder.Shape.next(
            url: url, from: worker.pos, length: book?.length, regionEnd: book?.region(of: worker.slot)?.end,
            rangesSupported: crew.rangesSupported, ifRange: item.remote.ifRange(for: worker.sourceIndex),
            connections: request.options.connections, isFileSource: item.isFileSource, conditions: request.conditions,
            firstBound: request.firstBound)
        worker.sentRange = shape.ranged
        worker.requestedEnd = shape.end
        defer { worker.freshConnection = false }
        item.tally.using(crew.workers.count)
        do {
            worker.easy = try engine.takeHandle { easy throws(TransferError) in
                try RequestBuilder.setUp(easy, for: worker, shape, request: request, configuration: engine.configuration)
            }
            worker.host = host
            worker.url = url
            worker.state = .active
            try engine.attach(worker)
        } catch {
            engine.releaseHost(host)
            worker.easy = nil
            item.fail(error)
        }
    }

    /// Asks the run's host table whether the worker's request to `url` may go
    /// (docs/hosts.md#host-states), and carries out a no: a request for a suspect or cooling host
    /// waits without spending a retry, or moves at once to a source of the item whose host
    /// is up; one for a down host (or a wait too long) fails the item unless it has a
    /// source that may still answer.
    private func hostAllows(_ worker: Worker, url: String) -> Bool {
        let origin = Origin.key(url)
        let permission = engine.loop.hosts.ask(origin, now: worker.sentAt)
        switch permission {
        case .go, .probe:
            worker.origin = origin
            worker.probe = permission == .probe
            worker.heldFor = nil
            return true
        case .hold(let until):
            if worker.redirectURL == nil, moveToOtherSource(worker, accepting: [.up]) {
                launch(worker)
            } else {
                worker.heldFor = origin
                worker.state = .backoff(until: until)
            }
        case .refuse(let refusal):
            if worker.redirectURL == nil, moveToOtherSource(worker, accepting: [.up, .suspect]) {
                launch(worker)
            } else {
                item.fail(engine.hostError(refusal, origin: origin))
            }
        }
        return false
    }

    /// Points the worker at the next live source of its item whose host stands in
    /// `states`; false when there is none. A cooling host is never accepted, so two
    /// sources that both refuse cannot send a worker back and forth.
    private func moveToOtherSource(_ worker: Worker, accepting states: Set<HostTable.State>) -> Bool {
        let count = request.sources.count
        guard count > 1 else { return false }
        let now = worker.sentAt
        for step in 1..<count {
            let candidate = (worker.sourceIndex + step) % count
            guard !crew.deadSources.contains(candidate) else { continue }
            let origin = Origin.key(item.remote.url(of: candidate))
            if states.contains(engine.loop.hosts.state(of: origin, now: now)) {
                worker.sourceIndex = candidate
                worker.heldFor = nil
                return true
            }
        }
        return false
    }

    /// `verdict.source` delivered under `min_rate` over the item's `timeout`
    /// (`SourcePace`): no connection asks it again. Those using it move to a live
    /// source, keeping their regions; with none left, the item fails `too_slow`.
    func leave(slow verdict: SourcePace.Verdict) {
        crew.markDead(verdict.source)
        let live = crew.liveSources
        guard !live.isEmpty else {
            let url = Redactor.redactURLAndQuery(request.sources[verdict.source])
            let floor = engine.configuration.rateFloor(for: item.remote.url(of: verdict.source))
            item.fail(
                TransferError(
                    code: .tooSlow,
                    message:
                        "\(url) sent \(Units.formatBytes(verdict.bytes)) in \(Rules.formatDuration(verdict.seconds.rounded())), "
                        + "under min_rate \(Units.formatBytes(floor))/s"))
            return
        }
        for worker in crew.workers where worker.sourceIndex == verdict.source {
            engine.detach(worker)
            worker.redirectURL = nil
            worker.redirects = 0
            worker.standing = RetryPolicy.Standing(
                source: crew.source(forSlot: worker.slot, among: live), sourcesTried: worker.sourcesTried + 1,
                retriesLeft: request.options.retries, consecutiveFailures: 0)
            if case .active = worker.state { relaunch(worker) }
        }
    }

    /// Sends the next request of a worker that waited (to retry, for a connection
    /// slot, or to move to a mirror): the rest of its region, or, when steals took
    /// all of it meanwhile, new work; it retires when there is none.
    func relaunch(_ worker: Worker) {
        if worker.redirectURL == nil, crew.owesNothing(worker) {
            guard let range = crew.nextRange(for: worker) else {
                crew.retire(worker)
                item.checkCompletion()
                return
            }
            worker.pos = range.lower
        }
        launch(worker)
    }

    /// The worker's request ended with `code` (not decided on its head): it follows
    /// the redirect the response was, or carries out `RequestEnd`'s verdict.
    func ended(_ worker: Worker, code: CURLcode, errorText: String) {
        if let target = worker.redirectTarget {
            follow(target, worker)
        } else {
            judgeEnd(of: worker, code: code, errorText: errorText)
        }
    }

    /// The response was a redirect: the worker's next request goes where it leads.
    private func follow(_ target: String, _ worker: Worker) {
        switch Redirect.nextHop(target, from: worker.url, hops: worker.redirects) {
        case .success(let next):
            worker.redirects += 1
            worker.redirectURL = next
            launch(worker)
        case .failure(let error):
            worker.redirectURL = nil
            worker.redirects = 0
            handleFailure(worker, error)
        }
    }

    /// Carries out `RequestEnd`'s verdict on a request that was not a redirect.
    private func judgeEnd(of worker: Worker, code: CURLcode, errorText: String) {
        worker.redirectURL = nil
        worker.redirects = 0
        // After redirects `worker.url` is the hop that failed; the message names the source too.
        let transportError =
            code == CURLE_OK
            ? nil
            : Curl.error(
                code, detail: errorText, url: request.sources[worker.sourceIndex], effectiveURL: worker.url,
                duringHead: !worker.headProcessed)
        if let transportError, transportError.code == .protocolViolation, worker.reusedConnection, !worker.freshConnection {
            // What an earlier response left on the connection (bytes past its length)
            // reads as a broken answer: asked once more on a connection of its own
            // before the failure counts (docs/engine.md#retries).
            worker.reusedConnection = false
            worker.freshConnection = true
            launch(worker)
            return
        }
        let facts = RequestEnd.Facts(
            callbackError: worker.error, truncated: worker.truncated, transportError: transportError,
            region: crew.book?.region(of: worker.slot), requestedEnd: worker.requestedEnd, position: worker.pos,
            status: worker.head.status, lengthKnown: crew.book != nil, expectedSize: request.expectedSize, url: worker.url)
        switch RequestEnd.judge(facts) {
        case .failed(let failure):
            handleFailure(worker, failure)
        case .failItem(let failure):
            item.fail(failure)
        case .ended(let length):
            crew.book = SegmentBook(length: length, missing: [], connections: 1, minSegment: request.options.minSegment)
            fallthrough
        case .delivered:
            worker.retriesLeft = request.options.retries
            worker.consecutiveFailures = 0
            if let region = crew.book?.region(of: worker.slot), region.next < region.end {
                launch(worker)  // the server sent less than asked: ask for the rest
            } else if crew.rangesSupported, let range = crew.nextRange(for: worker) {
                worker.pos = range.lower
                launch(worker)
            } else {
                crew.retire(worker)
            }
        }
    }

    /// A request failed: carries out `RetryPolicy`'s decision for the worker.
    private func handleFailure(_ worker: Worker, _ error: TransferError) {
        item.tally.lastError = error
        if error.retryable, !item.isFileSource {
            let state = engine.loop.hosts.state(of: Origin.key(worker.url), now: engine.now())
            if state == .suspect || state == .down {
                // The host is the trouble, not this request: the host table says when
                // to ask again (or that the item fails), and no retry is spent.
                worker.state = .backoff(until: 0)
                return
            }
        }
        let situation = RetryPolicy.Situation(
            error: error, progressed: worker.progressed, regionTaken: crew.owesNothing(worker),
            standing: worker.standing, retries: request.options.retries, sourceCount: request.sources.count,
            deadSources: crew.deadSources,
            beatFloor: Double(worker.requestBytes) >= Double(engine.configuration.rateFloor(for: worker.url))
                * request.options.timeout)
        switch RetryPolicy.decide(situation) {
        case .failItem:
            item.fail(error)
        case .carryOn(let standing):
            worker.standing = standing
            relaunch(worker)
        case .retry(let standing):
            item.tally.attempts += 1
            worker.standing = standing
            let delay = engine.backoff(attempt: standing.consecutiveFailures, hint: error.retryAfter)
            worker.state = .backoff(until: engine.now() + delay)
        case .switchSource(let standing, let sourceDead):
            if sourceDead { crew.markDead(worker.sourceIndex) }
            item.tally.attempts += 1
            worker.standing = standing
            relaunch(worker)
        case .retire(let sourceDead):
            if sourceDead { crew.markDead(worker.sourceIndex) }
            crew.retire(worker)
            // A range given back is taken again before the item can fail (docs/engine.md#retries):
            // by a live worker when its own region ends, or now by a new one.
            if let replacement = crew.replaceStranded(progress: item.storage.bytesThisRun) {
                item.tally.attempts += 1
                launch(replacement)
            }
        }
    }
}
