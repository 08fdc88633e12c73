import CCurl
import Foundation

/// One file being fetched: coordinates its `Crew` of connections (and the
/// `SegmentBook` they share), what it learns of the `RemoteFile`, its `ItemStorage`,
/// `ResponseJudge`'s verdicts on response heads, `RequestEnd`'s on finished requests
/// and `RetryPolicy`'s on failures.
///
/// Confined to the engine thread, except `prepare()`, which opens the part file (and
/// takes over an earlier run's files) on the engine's preparation queue before the
/// engine hands the item to `start()` (the handoff goes through the engine's inbox lock).
/// Decisions that would touch curl handles from inside a libcurl callback (restart,
/// fail, spawn more workers) are recorded in `pending` and carried out by `settle()`,
/// which the engine calls outside callbacks.
final class ItemTransfer: @unchecked Sendable {
    unowned let engine: TransferEngine
    let request: TransferRequest
    private let completion: @Sendable (TransferOutcome) -> Void
    private let storage: ItemStorage
    private var remote: RemoteFile
    private let isFileSource: Bool

    private(set) var finished = false
    /// The connections, the byte ranges they share and who fetches what next.
    private lazy var crew = Crew(item: self, connections: request.connections, minSegment: request.minSegment)
    private var book: SegmentBook? {
        get { crew.book }
        set { crew.book = newValue }
    }
    private var workers: [Worker] { crew.workers }
    private var total: Int64? { book?.length }
    /// The item's start and progress events.
    private var events: ItemEvents
    /// What the report says about the run.
    private var tally = ItemTally()
    /// `304` to the request's conditions: the item ends with nothing fetched.
    private var notModified = false

    /// What callbacks decided for `settle()` to carry out.
    private struct Pending {
        var failure: TransferError?
        /// A start over; no `reason` when nothing is worth a note (`presumed` regions
        /// met a server that refuses ranges, or a redirect).
        var restart: (reason: String?, stream: Worker?, counts: Bool)?
        /// The file is known: fan out.
        var expand = false
        /// The connection whose first response revealed the file, paused until
        /// `settle()` has fanned out.
        var held: Worker?
    }
    private var pending = Pending()

    init(engine: TransferEngine, request: TransferRequest, completion: @escaping @Sendable (TransferOutcome) -> Void) {
        self.engine = engine
        self.request = request
        self.completion = completion
        isFileSource = request.isFileSource
        storage = ItemStorage(request: request, configuration: engine.configuration)
        remote = RemoteFile(sources: request.sources)
        events = ItemEvents(id: request.id, interval: engine.configuration.progressInterval)
    }

    // MARK: Start

    /// Whether `prepare()` has anything to do before the item's turn: not for an item
    /// whose part file waits for its first response (`TransferRequest.opensPartLazily`).
    var needsPreparation: Bool { !request.opensPartLazily }

    /// Opens the part file and adopts valid resume state (preparation queue, before
    /// the item's turn); `EarlierRun` removes what cannot be trusted.
    func prepare() {
        if !request.knownFresh {
            let earlier = EarlierRun.takeOver(request) { crew.makeBook(length: $0, missing: $1) }
            tally.note = earlier.note
            if let saved = earlier.book {
                book = saved
                remote.adopt(earlier.validators)
                crew.rangesSupported = true
                storage.adoptEarlierRun()
                tally.resumedFrom = earlier.resumedFrom
            }
        }
        storage.open()
        if let book, storage.openFailure == nil, tally.resumedFrom > 0 {
            request.observer?.prefixCompleted(upTo: book.contiguousPrefix)
        }
    }

    /// Sends the first request (engine thread, after `prepare()`).
    func start() {
        let now = engine.now()
        storage.startClock(now: now)
        events.begin(now: now)
        if let failure = storage.openFailure {
            fail(failure)
            return
        }
        let first = crew.hire()
        if book != nil {
            // Resuming: one request first, to validate with If-Range before fanning out.
            guard let range = book?.take(for: first.slot) else {
                crew.retire(first)
                complete()
                return
            }
            first.pos = range.lower
        } else if let size = request.sizeToCutAhead(mayCutAhead: engine.mayCutAhead) {
            // The manifest gives the size: every region asks at once, a round trip sooner.
            book = crew.makeBook(length: size)
            crew.rangesSupported = true
            remote.presume()
            _ = book?.take(for: first.slot)
            launch(first)
            for worker in crew.fanOut() where !finished { launch(worker) }
            return
        }
        launch(first)
        if !finished, !isFileSource { crew.warmUp() }  // a `file:` URL has no connection to warm
    }

    // MARK: Requests

    /// Starts the worker's next request, for the rest of its region (or, before the
    /// length is known, the whole file), if its host has a free slot; otherwise it waits.
    private func launch(_ worker: Worker) {
        worker.resetRequest()
        worker.sentAt = engine.now()
        let url = worker.redirectURL ?? remote.url(of: worker.sourceIndex)
        let host = TransferEngine.hostKey(url)
        guard engine.acquireHost(host, warmUntil: crew.warmUntil) else {
            worker.state = .ready
            return
        }
        let shape = RequestBuilder.Shape.next(
            url: url, from: worker.pos, length: book?.length, regionEnd: book?.region(of: worker.slot)?.end,
            rangesSupported: crew.rangesSupported, ifRange: remote.ifRange(for: worker.sourceIndex),
            connections: request.connections, isFileSource: isFileSource, conditions: request.conditions)
        worker.sentRange = shape.ranged
        worker.requestedEnd = shape.end
        tally.using(workers.count)
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
            fail(error)
        }
    }

    // MARK: Response head

    /// Judges the response a worker received and carries out the verdict; returns
    /// what the write callback must return when the body is not to be written.
    private func handleHead(_ worker: Worker) -> Int? {
        worker.headProcessed = true
        let presumed = remote.presumed
        var known = ResponseJudge.Known(
            isFileSource: isFileSource, requestedStart: worker.requestStart, sentRange: worker.sentRange,
            length: presumed ? nil : total, validators: remote.validators,
            fromValidatorSource: remote.gaveValidators(worker.sourceIndex),
            hasData: tally.resumedFrom > 0 || storage.bytesThisRun > 0 || (total != nil && !presumed),
            conditional: !request.conditions.isEmpty && book == nil)
        if let easy = worker.easy {
            if isFileSource { known.fileLength = easy.contentLength }
            crew.noteHead(firstByteWait: easy.firstByteWait, sinceStart: easy.seconds(CURLINFO_STARTTRANSFER_TIME_T))
        }
        let head = worker.head
        switch ResponseJudge.judge(head, known, url: worker.url, redirectTarget: worker.easy?.redirectURL) {
        case .partial(let length, let rangeEnd):
            remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
            if book == nil || presumed {
                let fresh = book == nil
                guard learn(length: length, ranges: true, from: worker) else { return 0 }
                if fresh { _ = book?.take(for: worker.slot) }
            }
            // A server may send less than asked; the rest of the region stays missing.
            // It may also send more (to the file's end): that is cut where the request ends.
            worker.announcedEnd = rangeEnd ?? length
            worker.requestedEnd = min(worker.requestedEnd ?? length, rangeEnd ?? length)
            pending.expand = true
            return nil
        case .whole where presumed:
            // Ranges refused: this response is the file, one stream; the other regions' requests go.
            engine.mustAskFirst(request.sources[worker.sourceIndex])
            remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
            pending.restart = (nil, worker, false)
            return jg_writefunc_pause()
        case .follow where presumed:
            // Each region would follow its own redirect, perhaps to another mirror (or to
            // HTTPS): one request learns where the file is first, as without the size.
            engine.mustAskFirst(request.sources[worker.sourceIndex])
            pending.restart = (nil, nil, false)
            return 0
        case .whole(let length, let ranges):
            remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
            guard learn(length: length, ranges: ranges, from: worker) else { return 0 }
            worker.requestedEnd = length
            crew.adoptStream(worker)
            pending.expand = ranges
            return nil
        case .empty:
            guard learn(length: 0, ranges: false, from: worker) else { return 0 }
            worker.requestedEnd = 0
            return nil
        case .singleStream(let reason):
            remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
            pending.restart = (reason, worker, false)
            return jg_writefunc_pause()
        case .restartStream(let reason):
            remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
            pending.restart = (reason, worker, true)
            return jg_writefunc_pause()
        case .restartFresh(let reason):
            pending.restart = (reason, nil, true)
            return 0
        case .follow(let target):
            worker.redirectTarget = target
            return 0  // a redirect's body is not the file
        case .reject(let error):
            worker.error = error
            return 0
        case .notModified:
            remote.adopt(head.validators)
            notModified = true
            return 0
        }
    }

    /// Records what the first good response from `worker` says about the file; false
    /// (with the failure pending) when it contradicts the manifest or the disk refuses
    /// the space.
    private func learn(length: Int64?, ranges: Bool, from worker: Worker) -> Bool {
        crew.rangesSupported = ranges && length != nil
        if remote.presumed, crew.rangesSupported, length == book?.length {
            crew.recap()  // the regions stand, cut now for the round trip this response showed
        } else {
            book = length.map { crew.makeBook(length: $0) }
        }
        remote.revealed(by: worker.head.validators, from: worker.sourceIndex)
        // A length the manifest refuses reserves no space.
        if let failure = request.refusal(ofLength: length) {
            pending.failure = failure
            return false
        }
        if let failure = storage.learned(length: length, rangesSupported: crew.rangesSupported) {
            pending.failure = failure
            return false
        }
        announce()
        return true
    }

    private func announce() {
        let planned = crew.rangesSupported ? request.connections : 1
        if let event = events.start(length: total, connections: planned, resumedFrom: tally.resumedFrom) { engine.emit(event) }
    }

    // MARK: Body

    /// The write callback: judges the head first, honours `--limit-rate`, then hands
    /// the buffer to `ItemStorage`; a short count ends the request (its region is
    /// done, or it must stop).
    func receive(_ worker: Worker, _ bytes: UnsafeRawBufferPointer) -> Int {
        // A failure already decided (a length refused, a write that failed) ends every
        // request of the item: no more bytes for a part file about to go.
        if finished || worker.error != nil || pending.failure != nil { return 0 }
        if !worker.headProcessed {
            if let stop = handleHead(worker) { return stop }
            if pending.expand, !crew.fannedOut {
                if crew.wouldHire {
                    // The other regions are cut before this connection writes a byte,
                    // however much a busy machine let pile up in its socket: `settle()`
                    // fans out, then lets it go on.
                    pending.held = worker
                    return jg_writefunc_pause()
                }
                // One region (a small file): the fan-out hires no one and makes no curl
                // call, so it happens here and the body flows on unpaused.
                pending.expand = false
                _ = crew.fanOut()
            }
        }
        if engine.rateLimited, engine.takeRatePause(worker) { return jg_writefunc_pause() }
        let (written, failure) = storage.write(bytes, for: worker, book: &book)
        if let failure { pending.failure = failure }
        if written > 0 {
            worker.received(Int64(written), now: engine.now())
            engine.consumeRate(written)
        }
        return written
    }

    // MARK: Request end

    /// A request finished (libcurl's DONE message); decides what the worker does next.
    func requestFinished(_ worker: Worker, code: CURLcode) {
        let errorText = worker.easy?.errorText ?? ""
        if !worker.headProcessed, !finished, worker.error == nil, worker.head.status != 0 || isFileSource, code == CURLE_OK {
            if !worker.head.complete, !isFileSource {
                worker.error = .retryable(
                    .connection, "connection closed before the response head ended (\(Redactor.redactURL(worker.url)))")
            } else if handleHead(worker) != nil, pending.restart?.stream === worker {
                pending.restart?.stream = nil  // nothing left of this response to keep
            }
        }
        engine.detach(worker)
        worker.easy = nil
        guard !finished else { return }
        if notModified {
            stop(keepingState: false, as: .notModified)
            return
        }
        if pending.failure != nil || pending.restart != nil {
            if pending.restart?.stream === worker { pending.restart?.stream = nil }
            settle()
            return
        }
        if let target = worker.redirectTarget {
            follow(target, worker)
        } else {
            judgeEnd(of: worker, code: code, errorText: errorText)
        }
        settle()
        checkCompletion()
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
        let facts = RequestEnd.Facts(
            callbackError: worker.error, truncated: worker.truncated, transportError: transportError,
            region: book?.region(of: worker.slot), requestedEnd: worker.requestedEnd, position: worker.pos,
            status: worker.head.status, lengthKnown: book != nil, expectedSize: request.expectedSize, url: worker.url)
        switch RequestEnd.judge(facts) {
        case .failed(let failure):
            handleFailure(worker, failure)
        case .failItem(let failure):
            fail(failure)
        case .ended(let length):
            book = SegmentBook(length: length, missing: [], connections: 1, minSegment: request.minSegment)
            fallthrough
        case .delivered:
            worker.retriesLeft = request.retries
            worker.consecutiveFailures = 0
            if let region = book?.region(of: worker.slot), region.next < region.end {
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
        tally.lastError = error
        let situation = RetryPolicy.Situation(
            error: error, progressed: worker.progressed, regionTaken: crew.owesNothing(worker),
            standing: worker.standing, retries: request.retries, sourceCount: request.sources.count,
            deadSources: crew.deadSources)
        switch RetryPolicy.decide(situation) {
        case .failItem:
            fail(error)
        case .carryOn(let standing):
            worker.standing = standing
            relaunch(worker)
        case .retry(let standing):
            tally.attempts += 1
            worker.standing = standing
            let delay = engine.backoff(attempt: standing.consecutiveFailures, hint: error.retryAfter)
            worker.state = .backoff(until: engine.now() + delay)
        case .switchSource(let standing, let sourceDead):
            if sourceDead { crew.markDead(worker.sourceIndex) }
            tally.attempts += 1
            worker.standing = standing
            relaunch(worker)
        case .retire(let sourceDead):
            if sourceDead { crew.markDead(worker.sourceIndex) }
            crew.retire(worker)
            // A range given back is taken again before the item can fail (SPEC §5): by a
            // live worker when its own region ends, or now by a new one.
            if let replacement = crew.replaceStranded(progress: storage.bytesThisRun) {
                tally.attempts += 1
                launch(replacement)
            }
        }
    }

    /// Sends the next request of a worker that waited (to retry, for a connection
    /// slot, or to move to a mirror): the rest of its region, or, when steals took
    /// all of it meanwhile, new work; it retires when there is none.
    private func relaunch(_ worker: Worker) {
        if worker.redirectURL == nil, crew.owesNothing(worker) {
            guard let range = crew.nextRange(for: worker) else {
                crew.retire(worker)
                checkCompletion()
                return
            }
            worker.pos = range.lower
        }
        launch(worker)
    }

    private func checkCompletion() {
        guard !finished else { return }
        // Every byte is in: a connection waiting to retry (a `Retry-After`) or for a slot
        // has nothing left to fetch.
        if book?.isComplete == true {
            for worker in workers where worker.easy == nil { crew.retire(worker) }
        }
        guard workers.isEmpty else { return }
        if let book, book.isComplete {
            complete()
        } else {
            fail(tally.lastError ?? TransferError(code: .transfer, message: "no connection could finish the download"))
        }
    }

    // MARK: Deferred decisions

    /// Carries out what callbacks decided, and fans out once the file is known.
    func settle() {
        guard !finished else { return }
        if let failure = pending.failure {
            pending.failure = nil
            fail(failure)
            return
        }
        if let restart = pending.restart {
            pending.restart = nil
            self.restart(reason: restart.reason, keeping: restart.stream, counts: restart.counts)
            return
        }
        if pending.expand {
            pending.expand = false
            // Up to `connections` workers, each asking once for a region (SPEC §5).
            for worker in crew.fanOut() where !finished { launch(worker) }
        }
        if let held = pending.held {
            pending.held = nil
            engine.resume(held)
        }
    }

    /// Starts the item over from zero: the remote file is not the one the saved
    /// bytes came from (`counts`: at most three times), or it refuses ranges for now
    /// and `stream` is fetched as the single stream. Without a `reason`, regions cut
    /// from the manifest's size met a server that refuses ranges (`stream`) or a
    /// redirect (none): neither counted nor noted.
    private func restart(reason: String?, keeping stream: Worker?, counts: Bool) {
        if let reason, let failure = tally.restart(because: reason, counts: counts) {
            fail(failure)
            return
        }
        // Regions cut ahead and dropped unanswered are not connections the download used.
        if reason == nil { tally.forgetConnections() }
        for worker in workers where worker !== stream {
            if worker.easy != nil { engine.detach(worker) }
        }
        crew.startOver(keeping: stream)
        remote.forget()
        tally.resumedFrom = 0
        do { try storage.startOver() } catch {
            fail(error)
            return
        }
        request.observer?.restarted()
        guard let stream else {
            launch(crew.hire())
            return
        }
        stream.pos = 0
        stream.requestStart = 0
        // Ranges were refused just now: this run takes the file as one stream.
        let head = stream.head
        guard learn(length: head.contentLength, ranges: counts && head.acceptsRanges, from: stream) else {
            settle()
            return
        }
        stream.requestedEnd = head.contentLength
        crew.adoptStream(stream)
        pending.expand = crew.rangesSupported
        engine.resume(stream)
        settle()
    }

    // MARK: Timers

    /// Retries whose delay ran out, workers waiting for a host slot, checkpoints, progress.
    func tick(now: Double) {
        guard !finished else { return }
        for worker in crew.doneWaiting(now: now) {
            relaunch(worker)
            if finished { return }
        }
        if let worker = crew.replaceStalled(progress: storage.bytesThisRun) {
            tally.attempts += 1
            launch(worker)
        } else if let worker = crew.replaceLagging(canConnect: { engine.hasRoom(TransferEngine.hostKey(remote.url(of: $0))) }) {
            launch(worker)
        }
        if finished { return }
        storage.checkpointIfDue(now: now, book: book, validators: remote.validators)
        if events.due(now: now) {
            let present = book?.present ?? workers.first?.pos ?? 0
            engine.emit(
                events.report(
                    bytesThisRun: storage.bytesThisRun, bytesPresent: present, length: total, connections: crew.activeCount))
        }
    }

    /// The soonest moment `tick` has something to do.
    func nextDeadline(now: Double) -> Double {
        crew.nextLook(now: now, before: now + engine.configuration.progressInterval)
    }

    // MARK: End

    private func outcome(_ status: TransferOutcome.Status) -> TransferOutcome {
        tally.outcome(
            status, length: total, bytesDownloaded: storage.bytesThisRun, hasState: storage.hasState,
            validators: remote.validators)
    }

    /// The last byte is written: the hasher reads the rest of the file while the item's
    /// queue syncs it (`ItemDurability.finish`); whoever places the file waits for that.
    private func complete() {
        guard !finished else { return }
        let end: (synced: Bool, afterSyncs: TransferOutcome.AfterSyncs)?
        switch storage.finish() {
        case .failure(let failure):
            fail(failure)
            return
        case .success(let finish):
            end = finish
        }
        finished = true
        announce()
        var outcome = outcome(.completed)
        if let end {
            outcome.dataSynced = end.synced
            outcome.afterSyncs = end.afterSyncs
        }
        outcome.body = storage.takeHeldBody()
        // A body held in memory is hashed by whoever takes it; there is no file to read back.
        if outcome.body == nil { request.observer?.prefixCompleted(upTo: total ?? 0) }
        completion(outcome)
    }

    /// Fails the item; resume state stays for the next run unless the bytes cannot be trusted.
    func fail(_ error: TransferError) {
        guard !finished else { return }
        stop(keepingState: error.code != .sizeMismatch, as: .failed(error))
        engine.itemFailed()
    }

    /// Stops the item for a cancel: keeps resume state, or clears every trace.
    func cancel(clearing: Bool) {
        guard !finished else { return }
        stop(keepingState: !clearing, as: .cancelled)
    }

    /// Ends the item early: the last checkpoint is written when state is kept (and
    /// there is any), otherwise the part file and its state go.
    private func stop(keepingState: Bool, as status: TransferOutcome.Status) {
        for worker in workers where worker.easy != nil {
            engine.detach(worker)
            worker.easy = nil
        }
        // The regions stay in the book so the final checkpoint still sees them.
        storage.close(keepingState: keepingState, book: book, validators: remote.validators)
        finished = true
        completion(outcome(status))
    }

    /// Reports the item as never started: skipped (`--fail-fast`), or interrupted when
    /// a cancel stopped the run before its turn, so the run still counts as interrupted.
    func skip(cancelled: Bool = false) {
        storage.abandon()
        finished = true
        completion(outcome(cancelled ? .cancelled : .skipped))
    }
}
