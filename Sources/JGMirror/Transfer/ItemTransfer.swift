import CCurl
import Foundation

/// One file being fetched: coordinates its `Crew` of connections (and the
/// `SegmentBook` they share), the `RequestCycle` that sends their requests and
/// carries out the verdict on each one that ended, the `HeadHandler` that carries
/// out the verdict on each response head, its `ItemStorage`, and the item's start,
/// restarts and end.
///
/// The engine thread's only. Its own fields are `EngineBound`, checked on every access
/// in debug builds, and so are its crew's connections, its workers' fields and its
/// storage's; `RequestCycle` and `HeadHandler` hold no state of their own and read and
/// change the item's, as parts of it. Before its turn the engine's preparation queue
/// opens its part file from its request alone (`ItemPreparation`), which the item
/// adopts back on the engine thread (`adopt`).
/// Decisions that would touch curl handles from inside a libcurl callback (restart,
/// fail, spawn more workers) are recorded in `pending` and carried out by `settle()`,
/// which the engine calls outside callbacks; of the item's parts only `HeadHandler`
/// runs inside libcurl's callbacks, and it records its decisions in `pending`.
///
/// `@unchecked Sendable`: it crosses to the preparation queue and back through the
/// engine's inbox lock (`TransferEngine.Inbox.prepared`), touched there only through
/// its immutable `request`, and everything it owns is `EngineBound`.
final class ItemTransfer: @unchecked Sendable {
    unowned let engine: TransferEngine
    let request: TransferRequest
    private let completion: @Sendable (TransferOutcome) -> Void
    let storage: ItemStorage
    /// What the item knows of the remote file.
    @EngineBound var remote: RemoteFile
    let isFileSource: Bool

    /// The item ended: its outcome went out, or waits for its queue.
    @EngineBound private(set) var finished: Bool
    /// The connections, the byte ranges they share and who fetches what next: the
    /// engine thread's only, checked on every access in debug builds.
    var crew: Crew { boundCrew.value }
    private lazy var boundCrew = EngineBound(
        Crew(item: self, connections: request.options.connections, minSegment: request.options.minSegment),
        on: engine.engineThread)
    /// Sends the connections' requests and carries out how each ended.
    private(set) lazy var requests = RequestCycle(item: self)
    private lazy var heads = HeadHandler(item: self)
    /// The crew's book, once the length is known; changed in place (the write callback
    /// records each buffer in it: a copy would copy its regions per buffer).
    var book: SegmentBook? {
        get { crew.book }
        _modify { yield &crew.book }
    }
    /// The crew's connections.
    var workers: [Worker] { crew.workers }
    /// The file's length, once known.
    var total: Int64? { book?.length }
    /// The item's start and progress events.
    @EngineBound var events: ItemEvents
    /// What the report says about the run.
    @EngineBound var tally: ItemTally
    /// `304` to the request's conditions: the item ends with nothing fetched.
    @EngineBound var notModified: Bool
    /// What each source delivered over the item's `timeout`, across its requests.
    @EngineBound var pace: SourcePace

    /// What callbacks decided for `settle()` to carry out.
    struct Pending {
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
    @EngineBound var pending: Pending

    init(engine: TransferEngine, request: TransferRequest, completion: @escaping @Sendable (TransferOutcome) -> Void) {
        self.engine = engine
        self.request = request
        self.completion = completion
        isFileSource = request.isFileSource
        let thread = engine.engineThread
        storage = ItemStorage(request: request, configuration: engine.configuration, thread: thread)
        _remote = EngineBound(RemoteFile(sources: request.sources), on: thread)
        _finished = EngineBound(false, on: thread)
        _events = EngineBound(ItemEvents(id: request.id, interval: engine.configuration.progressInterval), on: thread)
        _tally = EngineBound(ItemTally(), on: thread)
        _notModified = EngineBound(false, on: thread)
        _pace = EngineBound(SourcePace(window: request.options.timeout), on: thread)
        _pending = EngineBound(Pending(), on: thread)
    }

    // MARK: Start

    /// Sends the first request (engine thread, once its preparation, if any, is adopted).
    func start() {
        let now = engine.now()
        storage.startClock(now: now)
        events.begin(now: now)
        if let failure = storage.openFailure {
            fail(failure)
            return
        }
        let first = crew.hire()
        // A fresh item's first request goes where the run has found its sources best
        // (`SourceShare`). A resumed one asks its primary, whose validators its saved
        // bytes match; a conditional one too, whose validators are the primary's.
        if book == nil, request.conditions.isEmpty, !isFileSource {
            first.sourceIndex = crew.source(forSlot: first.slot, among: crew.liveSources)
        }
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
            requests.launch(first)
            for worker in crew.fanOut() where !finished { requests.launch(worker) }
            return
        }
        requests.launch(first)
    }

    /// Emits the item's start event, once the file is known (or at its end, for an
    /// item that learned nothing before).
    func announce() {
        let planned = crew.rangesSupported ? request.options.connections : 1
        if let event = events.start(length: total, connections: planned, resumedFrom: tally.resumedFrom) { engine.emit(event) }
    }

    // MARK: Body

    /// The write callback: counts the bytes as received unless it pauses (libcurl then
    /// hands them over again), written or not (docs/reports.md#json-report).
    func receive(_ worker: Worker, _ bytes: UnsafeRawBufferPointer) -> Int {
        let taken = take(worker, bytes)
        if taken != jg_writefunc_pause() {
            tally.bytesReceived += Int64(bytes.count)
            worker.requestReceived += Int64(bytes.count)
        }
        return taken
    }

    /// Judges the head first, honours `--limit-rate`, then hands the buffer to
    /// `ItemStorage`; a short count ends the request (its region is done, or it must
    /// stop).
    private func take(_ worker: Worker, _ bytes: UnsafeRawBufferPointer) -> Int {
        // A failure already decided (a length refused, a write that failed) ends every
        // request of the item: no more bytes for a part file about to go.
        if finished || worker.error != nil || pending.failure != nil { return 0 }
        if !worker.headProcessed {
            if let stop = heads.handle(worker) { return stop }
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
            pace.received(Int64(written), from: worker.sourceIndex, first: worker.firstByteAt == nil)
            worker.received(Int64(written), now: engine.now())
            engine.consumeRate(written)
        }
        return written
    }

    // MARK: Request end

    /// A request finished (libcurl's DONE message); decides what the worker does next.
    func requestFinished(_ worker: Worker, code: CURLcode) {
        let errorText = worker.easy?.errorText ?? ""
        worker.reusedConnection = code != CURLE_OK && worker.easy?.reusedConnection == true
        if !worker.headProcessed, !finished, worker.error == nil, worker.head.status != 0 || isFileSource, code == CURLE_OK {
            if !worker.head.complete, !isFileSource {
                worker.error = .retryable(
                    .connection, "connection closed before the response head ended (\(Redactor.redactURL(worker.url)))")
            } else if heads.handle(worker) != nil, pending.restart?.stream === worker {
                pending.restart?.stream = nil  // nothing left of this response to keep
            }
        }
        engine.noteEnd(of: worker, code: code)
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
        requests.ended(worker, code: code, errorText: errorText)
        settle()
        checkCompletion()
    }

    /// Completes the item once every byte is in and no connection is left, or fails it
    /// when the last connection retired with bytes missing.
    func checkCompletion() {
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
            // Up to `connections` workers, each asking once for a region
            // (docs/engine.md#connections-and-ranges).
            for worker in crew.fanOut() where !finished { requests.launch(worker) }
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
            requests.launch(crew.hire())
            return
        }
        stream.pos = 0
        stream.requestStart = 0
        // Ranges were refused just now: this run takes the file as one stream.
        let head = stream.head
        guard heads.learn(length: head.contentLength, ranges: counts && head.acceptsRanges, from: stream) else {
            settle()
            return
        }
        stream.requestedEnd = head.contentLength
        crew.adoptStream(stream)
        pending.expand = crew.rangesSupported
        engine.resume(stream)
        settle()
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
        let queue = storage.close(keepingState: keepingState, book: book, validators: remote.validators)
        finished = true
        let outcome = outcome(status)
        // Nobody hears of the end before the last checkpoint (or the files' removal) is
        // done; the engine thread does not wait for it.
        guard let queue else { return completion(outcome) }
        engine.deliver(after: queue) { [completion] in completion(outcome) }
    }

    /// Reports the item as never started: skipped (`--fail-fast`), or interrupted when
    /// a cancel stopped the run before its turn, so the run still counts as interrupted.
    func skip(cancelled: Bool = false) {
        storage.abandon()
        finished = true
        completion(outcome(cancelled ? .cancelled : .skipped))
    }
}
