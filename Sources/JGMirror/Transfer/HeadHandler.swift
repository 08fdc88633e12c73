import CCurl

/// Carries out `ResponseJudge`'s verdict on each response head of one item: what
/// the item learns of the remote file (its length, validators, whether it takes
/// ranges, where a source's redirects lead), and what the head makes the item do
/// next — write the body, fan out, follow a redirect, start over, or stop.
///
/// Holds no state of its own: what it reads and changes is its item's, its crew's and
/// its workers', each access checked on the engine thread (`EngineBound`). It runs
/// inside libcurl's write callback (and once a request ended, for a head without a
/// body), so it only reads from curl handles: a restart, a failure or a fan-out,
/// which attach, detach or resume them, is left in the item's `pending` for
/// `ItemTransfer.settle()`.
final class HeadHandler {
    private unowned let item: ItemTransfer
    private var crew: Crew { item.crew }

    init(item: ItemTransfer) { self.item = item }

    /// Judges the response a worker received and carries out the verdict; returns
    /// what the write callback must return when the body is not to be written.
    func handle(_ worker: Worker) -> Int? {
        worker.headProcessed = true
        item.engine.noteAnswer(of: worker)
        let length = crew.book?.length
        let known = known(by: worker, length: length)
        if let easy = worker.easy {
            crew.noteHead(firstByteWait: easy.firstByteWait)
        }
        // libcurl tells where a redirect leads only once its response ended; one with
        // a body (Apache's, nginx's, Caddy's) is judged at its first body byte, so its
        // `Location` is resolved here as libcurl would (docs/engine.md#redirects).
        let redirectTarget =
            worker.easy?.redirectURL ?? worker.head.location.flatMap { CurlURL.resolve($0, against: worker.url) }
        let decision = ResponseJudge.judge(worker.head, known, url: worker.url, redirectTarget: redirectTarget)
        return carryOut(decision, for: worker, length: length)
    }

    /// What the item knows that the judge weighs a response head against, as `worker`'s
    /// request left it (`length`: the book's, if any).
    private func known(by worker: Worker, length: Int64?) -> ResponseJudge.Known {
        let presumed = item.remote.presumed
        var known = ResponseJudge.Known(
            isFileSource: item.isFileSource, requestedStart: worker.requestStart, sentRange: worker.sentRange,
            length: presumed ? nil : length, validators: item.remote.validators,
            fromValidatorSource: item.remote.gaveValidators(worker.sourceIndex),
            hasData: item.tally.resumedFrom > 0 || item.storage.bytesThisRun > 0 || (length != nil && !presumed),
            conditional: !item.request.conditions.isEmpty && length == nil)
        if item.isFileSource, let easy = worker.easy { known.fileLength = easy.contentLength }
        return known
    }

    /// Carries out the judge's `decision` on `worker`'s response; returns what the write
    /// callback must return when the body is not to be written.
    private func carryOut(_ decision: ResponseJudge.Decision, for worker: Worker, length: Int64?) -> Int? {
        let request = item.request
        let presumed = item.remote.presumed
        switch decision {
        case .partial(let total, let rangeEnd):
            return partial(worker, total: total, rangeEnd: rangeEnd, length: length)
        case .whole where presumed:
            // Ranges refused: this response is the file, one stream; the other regions' requests go.
            item.engine.mustAskFirst(request.sources[worker.sourceIndex])
            remember(worker)
            item.pending.restart = (nil, worker, false)
            return jg_writefunc_pause()
        case .follow where presumed:
            // Each region would follow its own redirect, perhaps to another mirror (or to
            // HTTPS): one request learns where the file is first, as without the size.
            item.engine.mustAskFirst(request.sources[worker.sourceIndex])
            item.pending.restart = (nil, nil, false)
            return 0
        case .whole(let total, let ranges):
            remember(worker)
            guard learn(length: total, ranges: ranges, from: worker) else { return 0 }
            worker.requestedEnd = total
            crew.adoptStream(worker)
            item.pending.expand = ranges
            return nil
        case .empty:
            guard learn(length: 0, ranges: false, from: worker) else { return 0 }
            worker.requestedEnd = 0
            return nil
        case .singleStream(let reason):
            remember(worker)
            item.pending.restart = (reason, worker, false)
            return jg_writefunc_pause()
        case .restartStream(let reason):
            remember(worker)
            item.pending.restart = (reason, worker, true)
            return jg_writefunc_pause()
        case .restartFresh(let reason):
            item.pending.restart = (reason, nil, true)
            return 0
        case .follow(let target):
            worker.redirectTarget = target
            return 0  // a redirect's body is not the file
        case .reject(let error):
            worker.error = error
            return 0
        case .notModified:
            item.remote.adopt(worker.head.validators)
            item.notModified = true
            return 0
        }
    }

    /// A 206 for `worker`'s range of a file of `total` bytes, ending at `rangeEnd`: the
    /// first one (or the first since the regions were presumed) reveals the file.
    private func partial(_ worker: Worker, total: Int64, rangeEnd: Int64?, length: Int64?) -> Int? {
        remember(worker)
        if length == nil || item.remote.presumed {
            guard learn(length: total, ranges: true, from: worker) else { return 0 }
            // Its region holds at least what it asked for (`TransferRequest.firstBound`).
            if length == nil { _ = crew.book?.take(for: worker.slot, atLeast: worker.requestedEnd ?? 0) }
        }
        // A server may send less than asked; the rest of the region stays missing.
        // It may also send more (to the file's end): that is cut where the request ends.
        worker.announcedEnd = rangeEnd ?? total
        worker.requestedEnd = min(worker.requestedEnd ?? total, rangeEnd ?? total)
        item.pending.expand = true
        return nil
    }

    /// Records what the first good response from `worker` says about the file; false
    /// (with the failure pending) when it contradicts the manifest or the disk refuses
    /// the space.
    func learn(length: Int64?, ranges: Bool, from worker: Worker) -> Bool {
        crew.rangesSupported = ranges && length != nil
        // Regions cut from the manifest's size stand when the length is the one presumed.
        if !(item.remote.presumed && crew.rangesSupported && length == crew.book?.length) {
            crew.book = length.map { crew.makeBook(length: $0) }
        }
        // Judged against the server's clock when it sent one (docs/state.md#racy-validators).
        let validators = worker.head.validators.judged(date: worker.head.date)
        item.remote.revealed(by: validators, from: worker.sourceIndex)
        // A length the manifest refuses reserves no space.
        if let failure = item.request.refusal(ofLength: length) {
            item.pending.failure = failure
            return false
        }
        if let failure = item.storage.learned(length: length, rangesSupported: crew.rangesSupported) {
            item.pending.failure = failure
            return false
        }
        item.announce()
        return true
    }

    /// Notes where the worker's source led, so its later ranges skip the redirects.
    private func remember(_ worker: Worker) {
        item.remote.remember(worker.easy?.effectiveURL, of: worker.sourceIndex)
    }
}
