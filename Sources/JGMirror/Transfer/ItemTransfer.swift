import CCurl
import Foundation
import Synchronization

/// One file being fetched: its part file, its ranges and the workers that fill them.
///
/// Confined to the engine thread, except `prepare()`, which for an item that takes
/// over an earlier run's files does that file work on another thread before the
/// engine hands it to `start()` (the handoff goes through the engine's inbox lock).
/// Decisions that would touch curl handles from inside a libcurl callback (restart,
/// fail, spawn more workers) are recorded and carried out by `settle()`, which the
/// engine calls outside callbacks.
final class ItemTransfer: @unchecked Sendable {
    unowned let engine: TransferEngine
    let request: TransferRequest
    private let completion: @Sendable (TransferOutcome) -> Void

    private(set) var finished = false
    private var part: PartFile?
    private var total: Int64?
    private var rangesSupported = false
    private var validators = Validators()
    /// Which source the validators came from; `If-Range` goes only there.
    private var validatorSource = 0
    /// Redirect-resolved URLs per source, so later ranges skip the redirects.
    private var effectiveURLs: [Int: String] = [:]
    /// Sources that answered with a permanent error (404, …); no new worker starts there.
    private var deadSources = Set<Int>()
    /// Missing ranges no worker owns, sorted.
    private var unassigned: [ByteRange] = []
    private var workers: [Worker] = []
    private var nextSlot = 0
    private var expanded = false
    private var announced = false

    private var bytesThisRun: Int64 = 0
    private var resumedFrom: Int64 = 0
    private var peakConnections = 0
    /// 1 + every retry and every switch to a mirror.
    private var attempts = 1
    private var restarts = 0
    private var note: String?
    private var lastError: TransferError?

    /// Keeps resume state (`.jgd`): ranges supported and large enough to be worth it.
    private var stateful = false
    /// Resume state exists on disk or a checkpoint was queued: dropping or completing
    /// must wait for `syncQueue`.
    private var checkpointed = false
    private var prepareFailure: TransferError?
    /// The shortest request-to-first-byte time seen: requests that waited behind
    /// others in libcurl's loop would overstate the round trip.
    private var minRoundTrip = Double.infinity
    /// This item's flushes and checkpoints, off the event loop. Serial, so a flush
    /// that met a write error has recorded it before the next checkpoint asks; one
    /// per item, so finishing waits for this item's syncs, not for other items'.
    private lazy var syncQueue = DispatchQueue(label: "jgmirror.item-sync")
    private let checkpointBusy = Locked(false)
    /// Bytes written since the last flush was queued (durable runs).
    private var unflushed: Int64 = 0
    /// A flush was queued: completing must wait for `syncQueue`.
    private var flushed = false
    private let flushBusy = Locked(false)
    private var lastCheckpoint = 0.0
    private var lastProgress = 0.0
    private var reportedPrefix: Int64 = 0

    private var pendingFailure: TransferError?
    /// Keeps a body of unknown length from filling the disk (`--min-free`).
    private lazy var spaceGuard = SpaceGuard(minFree: engine.configuration.minFree, probe: engine.configuration.freeSpace)
    private var pendingRestart: (reason: String, stream: Worker?)?
    private var needsExpand = false

    init(engine: TransferEngine, request: TransferRequest, completion: @escaping @Sendable (TransferOutcome) -> Void) {
        self.engine = engine
        self.request = request
        self.completion = completion
    }

    private var isFileSource: Bool { request.sources.first?.lowercased().hasPrefix("file:") ?? false }

    // MARK: Start

    /// Opens the part file and adopts valid resume state. A new part file is created
    /// on the engine thread; taking over an earlier run's files (stat, read, unlink)
    /// runs off it.
    func prepare() {
        if !request.knownFresh { takeOverEarlierRun() }
        do {
            part = try PartFile(path: request.partPath, fresh: total == nil, root: request.root)
        } catch {
            prepareFailure = error
            return
        }
        if let total, resumedFrom > 0 {
            request.observer?.prefixCompleted(upTo: unassigned.first?.lower ?? total)
        }
    }

    /// Loads a valid resume state, or removes what an earlier run left behind.
    private func takeOverEarlierRun() {
        let root = request.root
        let partInfo = root.status(request.partPath)
        let partExists = partInfo != nil
        let partSize = partInfo.map { Int64($0.st_size) }
        let stateExists = root.status(request.statePath) != nil
        if !request.resume || !stateExists {
            // Resume is off, or a part file has no state and holds nothing we can vouch for.
            if stateExists { root.unlink(request.statePath) }
            if partExists { root.unlink(request.partPath) }
        } else {
            switch ResumeState.load(path: request.statePath, url: request.sources[0], partSize: partSize, root: root) {
            case .valid(let state):
                total = state.length
                validators = state.validators
                rangesSupported = true
                stateful = true
                checkpointed = true
                unassigned = state.missingRanges
                resumedFrom = state.length - unassigned.reduce(0) { $0 + $1.count }
            case .discarded(let reason):
                note = reason
                discardFiles()
            case .none:
                if partExists { root.unlink(request.partPath) }
            }
        }
    }

    /// Sends the first request (engine thread, after `prepare()`).
    func start() {
        let now = engine.now()
        lastCheckpoint = now
        lastProgress = now
        if let failure = prepareFailure {
            fail(failure)
            return
        }
        let first = makeWorker()
        if total != nil {
            // Resuming: one request first, to validate with If-Range before fanning out.
            guard let range = takeChunk(for: first) else {
                workers.removeAll()
                complete()
                return
            }
            first.assign(range)
        } else if request.connections > 1 && !isFileSource {
            // Fresh: a first range of one segment reveals length, validators and
            // range support without a HEAD; small files finish on it.
            first.assign(ByteRange(lower: 0, upper: request.minSegment))
        } else {
            first.pos = 0
            first.end = nil
        }
        launch(first)
    }

    private func makeWorker() -> Worker {
        let worker = Worker(item: self, slot: nextSlot, retries: request.retries)
        nextSlot += 1
        workers.append(worker)
        peakConnections = max(peakConnections, workers.count)
        return worker
    }

    // MARK: Requests

    private func sourceURL(_ index: Int) -> String { effectiveURLs[index] ?? request.sources[index] }

    /// Starts the worker's next request if its host has a free slot; otherwise it waits.
    private func launch(_ worker: Worker) {
        worker.resetRequest()
        let url = worker.redirectURL ?? sourceURL(worker.sourceIndex)
        let host = TransferEngine.hostKey(url)
        guard engine.acquireHost(host) else {
            worker.state = .ready
            return
        }
        worker.requestStart = worker.pos
        worker.requestedEnd = worker.end.map { min($0, worker.pos + max(worker.pieceSize, request.minSegment)) }
        do {
            let easy = try makeHandle(for: worker, url: url)
            worker.easy = easy
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

    private func makeHandle(for worker: Worker, url: String) throws(TransferError) -> CurlEasy {
        let easy = try CurlEasy()
        let configuration = engine.configuration
        try easy.set(CURLOPT_URL, url)
        try easy.set(CURLOPT_NOSIGNAL, 1)
        // Redirects are followed here, one request per hop, so that the headers go
        // only where SPEC §10 lets them (see `Redirect`).
        try easy.set(CURLOPT_FOLLOWLOCATION, 0)
        try easy.set(CURLOPT_PROTOCOLS_STR, configuration.allowFileURLs ? "http,https,file" : "http,https")
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(request.timeout * 1000))
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
        try easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(request.timeout.rounded(.up))))
        try easy.set(CURLOPT_BUFFERSIZE, 512 * 1024)
        try easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        if Curl.hasNetrc { try easy.set(CURLOPT_NETRC, jg_netrc_optional()) }
        try easy.set(CURLOPT_HTTP_VERSION, worker.slot == 0 ? jg_http_version_2tls() : jg_http_version_1_1())
        if worker.slot == 0, url.lowercased().hasPrefix("https:") {
            // Wait for a connection being set up to say whether it multiplexes (HTTP/2)
            // rather than open another: a burst of small items then shares one.
            try easy.set(CURLOPT_PIPEWAIT, 1)
        }
        if request.insecure {
            try easy.set(CURLOPT_SSL_VERIFYPEER, 0)
            try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caCert = configuration.caCert {
            try easy.set(CURLOPT_CAINFO, caCert)
            if let capath = Curl.defaultCAPath { try easy.set(CURLOPT_CAPATH, capath) }
        }
        var headers = Redirect.sendsHeaders(to: url, sources: request.sources, forward: request.forwardHeaders) ? request.headers : []
        if !headers.contains(where: { $0.lowercased().hasPrefix("user-agent:") }) {
            headers.append("User-Agent: jgmirror/\(JGMirrorVersion.string)")
        }
        if worker.pos > 0 || worker.end != nil {
            worker.sentRange = true
            try easy.set(CURLOPT_RANGE, "\(worker.pos)-" + (worker.requestedEnd.map { String($0 - 1) } ?? ""))
            if worker.sourceIndex == validatorSource, let ifRange = validators.ifRange, total != nil {
                headers.append("If-Range: \(ifRange)")
            }
        }
        try easy.setHeaders(headers)
        let userdata = Unmanaged.passUnretained(worker).toOpaque()
        try easy.set(CURLOPT_WRITEDATA, pointer: userdata)
        try easy.set(CURLOPT_HEADERDATA, pointer: userdata)
        _ = jg_easy_setopt_write_cb(easy.handle) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            let worker = Unmanaged<Worker>.fromOpaque(userdata).takeUnretainedValue()
            return worker.item.receive(worker, UnsafeRawBufferPointer(start: data, count: size * count))
        }
        _ = jg_easy_setopt_header_cb(easy.handle) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            let worker = Unmanaged<Worker>.fromOpaque(userdata).takeUnretainedValue()
            let length = size * count
            worker.head.consume(line: UnsafeRawBufferPointer(start: data, count: length))
            return length
        }
        return easy
    }

    // MARK: Response head

    private enum HeadDecision {
        case proceed
        /// This request failed; the worker retries or moves on.
        case reject(TransferError)
        /// The whole item fails.
        case failItem(TransferError)
        /// The remote changed: start over, keeping this worker's full-body response.
        case restartStream(String)
        /// The remote changed: start over with a new first request.
        case restartFresh(String)
        /// A redirect: the worker asks again where it points, once this request ends.
        case follow
    }

    /// Judges the response a worker received, updating the item's knowledge of the file.
    private func judgeHead(_ worker: Worker) -> HeadDecision {
        worker.headProcessed = true
        var head = worker.head
        if isFileSource {
            // file:// has no status line; libcurl knows the length.
            var length: curl_off_t = -1
            if let easy = worker.easy { _ = jg_easy_getinfo_off_t(easy.handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) }
            head.status = 200
            head.contentLength = length >= 0 ? Int64(length) : nil
        }
        let hasData = resumedFrom > 0 || bytesThisRun > 0 || total != nil
        if (300...399).contains(head.status), head.status != 304, let target = worker.easy?.redirectURL {
            worker.redirectTarget = target
            return .follow
        }
        switch head.status {
        case 206:
            guard let start = head.rangeStart, let length = head.rangeTotal, start == worker.pos else {
                return .reject(.retryable(.protocolViolation, "server answered a different byte range than asked (\(worker.url))"))
            }
            if let total, total != length {
                return .restartFresh("remote length changed from \(total) to \(length) bytes; restarted from zero")
            }
            if worker.sourceIndex == validatorSource, validators.conflicts(with: head.validators), total != nil {
                return .restartFresh("remote file changed (validator differs); restarted from zero")
            }
            if let rangeEnd = head.rangeEnd, let requested = worker.requestedEnd, rangeEnd < requested {
                // A server may send less than asked; the rest is simply still missing.
                worker.requestedEnd = rangeEnd
            }
            rememberEffectiveURL(worker)
            if total == nil {
                if let failure = learn(length: length, ranges: true, validators: head.validators, source: worker.sourceIndex) {
                    return .failItem(failure)
                }
                let probeEnd = min(worker.end ?? length, length)
                worker.end = probeEnd
                worker.requestedEnd = min(worker.requestedEnd ?? length, length)
                if probeEnd < length { unassigned = [ByteRange(lower: probeEnd, upper: length)] }
            }
            needsExpand = true
            return .proceed
        case 200:
            rememberEffectiveURL(worker)
            if hasData {
                return .restartStream(
                    worker.sentRange && !head.acceptsRanges
                        ? "server ignored the range request; restarted from zero"
                        : "remote file changed (If-Range answered with the whole file); restarted from zero")
            }
            let ranges = !worker.sentRange && head.acceptsRanges && !isFileSource
            if let failure = learn(length: head.contentLength, ranges: ranges, validators: head.validators, source: worker.sourceIndex) {
                return .failItem(failure)
            }
            worker.end = head.contentLength
            worker.requestedEnd = head.contentLength
            needsExpand = ranges
            return .proceed
        case 416:
            if !hasData, worker.pos == 0, head.rangeTotal == 0 {
                // An empty file cannot satisfy any range.
                if let failure = learn(length: 0, ranges: false, validators: head.validators, source: worker.sourceIndex) {
                    return .failItem(failure)
                }
                worker.end = 0
                worker.requestedEnd = 0
                return .proceed
            }
            if hasData { return .restartFresh("remote file shrank (416 to a saved range); restarted from zero") }
            return .reject(.http(416, url: worker.url))
        default:
            return .reject(.http(head.status, url: worker.url, retryAfter: head.retryAfter))
        }
    }

    /// Records what the first good response says about the file; returns a failure
    /// when it contradicts the manifest or the disk refuses the space.
    private func learn(length: Int64?, ranges: Bool, validators: Validators, source: Int) -> TransferError? {
        total = length
        rangesSupported = ranges && length != nil
        self.validators = validators
        validatorSource = source
        if let expected = request.expectedSize, let length, length != expected {
            return .sizeMismatch("server announced \(length) bytes, the manifest says \(expected)")
        }
        if let limit = request.sizeLimit, let length, length > limit {
            return .tooLarge("server announced \(length) bytes, more than max_size (\(limit))")
        }
        stateful = rangesSupported && (length ?? 0) > request.minSegment && request.resume
        // A small single-request file is written in one go; reserving it costs more
        // than it saves. Resumable files get their full length at once.
        if let length, let part, stateful || length > 1 << 20 {
            do { try part.reserve(length) } catch { return error }
        }
        announce()
        return nil
    }

    private func announce() {
        guard !announced else { return }
        announced = true
        let planned = rangesSupported ? request.connections : 1
        engine.emit(.started(id: request.id, length: total, connections: planned, resumedFrom: resumedFrom))
    }

    private func rememberEffectiveURL(_ worker: Worker) {
        if effectiveURLs[worker.sourceIndex] == nil, let url = worker.easy?.effectiveURL {
            effectiveURLs[worker.sourceIndex] = url
        }
    }

    // MARK: Body

    /// The write callback: positional write of one buffer; a short count stops the request.
    func receive(_ worker: Worker, _ bytes: UnsafeRawBufferPointer) -> Int {
        if finished || worker.error != nil { return 0 }
        if !worker.headProcessed {
            switch judgeHead(worker) {
            case .proceed: break
            case .reject(let error):
                worker.error = error
                return 0
            case .failItem(let error):
                pendingFailure = error
                return 0
            case .restartFresh(let reason):
                pendingRestart = (reason, nil)
                return 0
            case .restartStream(let reason):
                pendingRestart = (reason, worker)
                return jg_writefunc_pause()
            case .follow:
                return 0  // a redirect's body is not the file
            }
        }
        if engine.rateLimited, engine.takeRatePause(worker) { return jg_writefunc_pause() }
        var count = bytes.count
        if let end = worker.end {
            let requested = worker.requestedEnd ?? end
            let room = max(0, min(end, requested) - worker.pos)
            if Int64(count) > room {
                if end >= requested {
                    pendingFailure = .sizeMismatch(
                        "server sent more bytes than announced (over \(requested) for \(Redactor.redactURL(worker.url)))")
                    return 0
                }
                worker.truncated = true
                count = Int(room)
            }
        } else {
            if let expected = request.expectedSize, worker.pos + Int64(count) > expected {
                pendingFailure = .sizeMismatch("server sent more than the expected \(expected) bytes")
                return 0
            }
            if let limit = request.sizeLimit, worker.pos + Int64(count) > limit {
                pendingFailure = .tooLarge("the body of unknown length grew past max_size (\(limit) bytes); stopped")
                return 0
            }
            if let part, let failure = spaceGuard.admit(count, fd: part.fd, path: part.path) {
                pendingFailure = failure
                return 0
            }
        }
        guard count > 0 else { return 0 }
        do {
            try part?.write(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: worker.pos)
        } catch {
            pendingFailure = error
            return 0
        }
        if let observer = request.observer, let total, total <= partFileInlineLimit {
            observer.written(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), at: worker.pos)
        }
        worker.pos += Int64(count)
        worker.consecutiveFailures = 0
        bytesThisRun += Int64(count)
        unflushed += Int64(count)
        if unflushed >= engine.configuration.flushStep, engine.configuration.durable { flush() }
        engine.consumeRate(count)
        let prefix = contiguousPrefix()
        if prefix - reportedPrefix >= 4 << 20 {
            reportedPrefix = prefix
            request.observer?.prefixCompleted(upTo: prefix)
        }
        return count
    }

    /// The first byte not yet written.
    private func contiguousPrefix() -> Int64 {
        var first = unassigned.first?.lower ?? Int64.max
        for worker in workers {
            if let end = worker.end, worker.pos >= end { continue }
            first = min(first, worker.pos)
        }
        return first == Int64.max ? (total ?? 0) : first
    }

    private func missingRanges() -> [ByteRange] {
        var ranges = unassigned
        for worker in workers {
            if let end = worker.end, end > worker.pos { ranges.append(ByteRange(lower: worker.pos, upper: end)) }
        }
        return ByteRange.normalized(ranges)
    }

    private var bytesPresent: Int64 {
        guard let total else { return workers.first?.pos ?? 0 }
        return total - missingRanges().reduce(0) { $0 + $1.count }
    }

    // MARK: Request end

    /// A request finished (libcurl's DONE message); decides what the worker does next.
    func requestFinished(_ worker: Worker, code: CURLcode) {
        let errorText = worker.easy?.errorText ?? ""
        if !worker.headProcessed, !finished, worker.error == nil, worker.head.status != 0 || isFileSource, code == CURLE_OK {
            switch judgeHead(worker) {
            case .proceed: break
            case .reject(let error): worker.error = error
            case .failItem(let error): pendingFailure = error
            case .restartFresh(let reason), .restartStream(let reason): pendingRestart = (reason, nil)
            case .follow: break
            }
        }
        if code == CURLE_OK, let easy = worker.easy {
            let timing = Pace.Timing(easy)
            minRoundTrip = min(minRoundTrip, timing.roundTrip)
            worker.pieceSize = Pace.pieceSize(
                bytes: worker.pos - worker.requestStart, receiving: timing.receiving, roundTrip: minRoundTrip,
                connections: request.connections)
        }
        engine.detach(worker)
        worker.easy = nil
        guard !finished else { return }
        if pendingFailure != nil || pendingRestart != nil {
            if pendingRestart?.stream === worker { pendingRestart?.stream = nil }
            settle()
            return
        }
        if let target = worker.redirectTarget {
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
            settle()
            checkCompletion()
            return
        }
        worker.redirectURL = nil
        worker.redirects = 0
        var failure: TransferError?
        if let error = worker.error {
            failure = error
        } else if worker.truncated {
            failure = nil
        } else if code != CURLE_OK {
            // After redirects `worker.url` is the hop that failed; the message names the source too.
            failure = Curl.error(
                code, detail: errorText, url: request.sources[worker.sourceIndex], effectiveURL: worker.url,
                duringHead: !worker.headProcessed)
        } else if let end = worker.end, worker.pos < min(end, worker.requestedEnd ?? end) {
            failure = .retryable(
                .connection,
                "connection closed \(end - worker.pos) bytes short (\(Redactor.redactURL(worker.url)))")
        } else if worker.end == nil {
            // A body of unannounced length ends where the server closes it.
            let length = worker.pos
            if let expected = request.expectedSize, length != expected {
                fail(.sizeMismatch("received \(length) bytes, the manifest says \(expected)"))
                return
            }
            total = length
            worker.end = length
        }
        if let failure {
            handleFailure(worker, failure)
        } else {
            worker.retriesLeft = request.retries
            if let end = worker.end, worker.pos < end {
                launch(worker)  // the next piece of its own range
            } else if let next = nextRange(for: worker) {
                worker.assign(next)
                launch(worker)
            } else {
                retire(worker)
            }
        }
        settle()
        checkCompletion()
    }

    private func handleFailure(_ worker: Worker, _ error: TransferError) {
        lastError = error
        if error.code.isLocal || error.code == .sizeMismatch {
            fail(error)
            return
        }
        if error.retryable, worker.retriesLeft > 0 {
            attempts += 1
            worker.retriesLeft -= 1
            worker.consecutiveFailures += 1
            worker.state = .backoff(until: engine.now() + engine.backoff(attempt: worker.consecutiveFailures, hint: error.retryAfter))
            return
        }
        // This source is spent for this worker; move on to the next one it has not tried.
        if !error.retryable { deadSources.insert(worker.sourceIndex) }
        let count = request.sources.count
        if worker.sourcesTried < count,
            let next = (1..<count).lazy.map({ (worker.sourceIndex + $0) % count }).first(where: { !self.deadSources.contains($0) })
        {
            attempts += 1
            worker.sourcesTried += 1
            worker.sourceIndex = next
            worker.retriesLeft = request.retries
            worker.consecutiveFailures = 0
            launch(worker)
            return
        }
        retire(worker)
    }

    /// The next range for a worker whose range is done: the front of what nobody owns,
    /// else half of the largest range another worker still has (work stealing).
    private func nextRange(for worker: Worker) -> ByteRange? {
        if let chunk = takeChunk(for: worker) { return chunk }
        guard rangesSupported else { return nil }
        var victim: Worker?
        var largest: Int64 = 0
        for other in workers where other !== worker {
            if let remaining = other.remaining, remaining > largest {
                largest = remaining
                victim = other
            }
        }
        guard let victim, let end = victim.end, largest >= 2 * request.minSegment else { return nil }
        // Leave the victim the half it is already streaming; align the cut to 64 KiB.
        var cut = victim.pos + largest / 2
        cut -= cut % (64 * 1024)
        // Cutting inside the victim's request aborts it and its connection; cut where
        // that request ends instead when enough is left beyond it.
        if let requested = victim.requestedEnd, victim.easy != nil, cut < requested,
            end - requested >= request.minSegment
        {
            cut = requested
        }
        guard cut > victim.pos, cut < end else { return nil }
        victim.end = cut
        return ByteRange(lower: cut, upper: end)
    }

    /// Takes `ByteRange.frontChunk` out of the unowned bytes, sized to the worker's piece.
    private func takeChunk(for worker: Worker) -> ByteRange? {
        guard
            let chunk = ByteRange.frontChunk(
                of: unassigned, piece: worker.pieceSize, minimum: request.minSegment, connections: request.connections)
        else { return nil }
        if chunk.upper >= unassigned[0].upper { unassigned.removeFirst() } else { unassigned[0].lower = chunk.upper }
        return chunk
    }

    /// Removes a worker; what it still owned returns to the pool for the others.
    private func retire(_ worker: Worker) {
        workers.removeAll { $0 === worker }
        if let end = worker.end, end > worker.pos {
            unassigned = ByteRange.normalized(unassigned + [ByteRange(lower: worker.pos, upper: end)])
        }
    }

    private func checkCompletion() {
        guard !finished, workers.isEmpty else { return }
        if let total, unassigned.isEmpty, total >= 0 {
            complete()
        } else {
            fail(lastError ?? TransferError(code: .transfer, message: "no connection could finish the download"))
        }
    }

    // MARK: Deferred decisions

    /// Carries out what callbacks decided, and fans out once the file is known.
    func settle() {
        guard !finished else { return }
        if let failure = pendingFailure {
            pendingFailure = nil
            fail(failure)
            return
        }
        if let restart = pendingRestart {
            pendingRestart = nil
            self.restart(reason: restart.reason, keeping: restart.stream)
            return
        }
        if needsExpand {
            needsExpand = false
            expand()
        }
    }

    /// Puts up to `connections` workers on the missing bytes, each taking chunks from
    /// the front (SPEC §5 splits the file into one range per connection; taken front
    /// first, the prefix SPEC §7 hashes during the download keeps growing instead of
    /// waiting for the first range, and a slow connection holds back one chunk).
    private func expand() {
        guard rangesSupported, request.connections > workers.count, total != nil else { return }
        if !expanded {
            expanded = true
            if unassigned.isEmpty, let stream = workers.first, let end = stream.end, end - stream.pos >= 2 * request.minSegment {
                // A whole-body stream keeps the front; the rest goes to the pool.
                unassigned = [ByteRange(lower: stream.pos, upper: end)]
                stream.end = takeChunk(for: stream)?.upper ?? end
            }
        }
        // With mirrors, the connections are spread over the sources still alive.
        let live = request.sources.indices.filter { !deadSources.contains($0) }
        while workers.count < request.connections, !unassigned.isEmpty {
            let worker = makeWorker()
            if !live.isEmpty { worker.sourceIndex = live[worker.slot % live.count] }
            guard let chunk = takeChunk(for: worker) else { break }
            worker.assign(chunk)
            launch(worker)
        }
    }

    /// The remote file is not the one the saved bytes came from: drop them all.
    private func restart(reason: String, keeping stream: Worker?) {
        restarts += 1
        note = reason
        guard restarts <= 3 else {
            fail(TransferError(code: .changed, message: "remote file kept changing during the download (\(reason))"))
            return
        }
        for worker in workers where worker !== stream {
            if worker.easy != nil { engine.detach(worker) }
        }
        workers = stream.map { [$0] } ?? []
        unassigned = []
        expanded = false
        resumedFrom = 0
        reportedPrefix = 0
        total = nil
        rangesSupported = false
        validators = Validators()
        effectiveURLs = [:]
        dropState()
        do { try part?.truncate() } catch {
            fail(error)
            return
        }
        request.observer?.restarted()
        if let stream {
            let head = stream.head
            stream.pos = 0
            if let failure = learn(length: head.contentLength, ranges: head.acceptsRanges, validators: head.validators, source: stream.sourceIndex) {
                fail(failure)
                return
            }
            stream.end = head.contentLength
            stream.requestedEnd = head.contentLength
            needsExpand = rangesSupported
            engine.resume(stream)
            settle()
        } else {
            let worker = makeWorker()
            if request.connections > 1 {
                worker.assign(ByteRange(lower: 0, upper: request.minSegment))
            }
            launch(worker)
        }
    }

    // MARK: Timers

    /// Retries whose delay ran out, workers waiting for a host slot, checkpoints, progress.
    func tick(now: Double) {
        guard !finished else { return }
        for worker in workers {
            switch worker.state {
            case .ready: launch(worker)
            case .backoff(let until) where until <= now: launch(worker)
            default: break
            }
            if finished { return }
        }
        if stateful, now - lastCheckpoint >= engine.configuration.checkpointInterval {
            lastCheckpoint = now
            checkpoint(wait: false)
        }
        if now - lastProgress >= engine.configuration.progressInterval {
            lastProgress = now
            let active = workers.filter { if case .active = $0.state { true } else { false } }.count
            engine.emit(
                .progress(id: request.id, bytesThisRun: bytesThisRun, bytesPresent: bytesPresent, length: total, connections: active))
        }
    }

    /// The soonest moment `tick` has something to do.
    func nextDeadline(now: Double) -> Double {
        var deadline = now + engine.configuration.progressInterval
        for worker in workers {
            if case .backoff(let until) = worker.state { deadline = min(deadline, until) }
            if case .ready = worker.state { deadline = min(deadline, now + 0.05) }
        }
        return deadline
    }

    // MARK: Resume state

    /// Saves resume state: the part file's data is synced first, so the record never
    /// claims bytes a power cut could lose (under `--no-fsync` the record says so, and
    /// is not trusted after a reboot).
    private func checkpoint(wait: Bool) {
        guard stateful, let total, let part else { return }
        let durable = engine.configuration.durable
        var state = ResumeState(url: request.sources[0], validators: validators, length: total, missing: missingRanges())
        if !durable { state.unsyncedBoot = ResumeState.bootID ?? "unknown" }
        let path = request.statePath
        let root = request.root
        // A checkpoint whose sync fails writes no state (a later resume redoes more);
        // the failure itself fails the item when it completes.
        let sync = engine.configuration.dataSync
        let save: @Sendable () -> Void = { [state] in
            if durable {
                do { try part.syncData(using: sync) } catch { return }
            }
            try? state.write(to: path, durable: durable, root: root)
        }
        if wait {
            checkpointed = true
            syncQueue.sync(execute: save)
            return
        }
        if enqueue(save, unlessBusy: checkpointBusy) { checkpointed = true }
    }

    /// Syncs what was written so far on `syncQueue`, one flush at a time. A failed
    /// flush fails the item at the next flush or at completion; resume state
    /// written before it still holds (it claims only bytes synced then), and none
    /// is written after it.
    private func flush() {
        guard let part else { return }
        if let failure = part.failedSync {
            pendingFailure = failure
            return
        }
        let sync = engine.configuration.dataSync
        guard enqueue({ try? part.syncData(using: sync) }, unlessBusy: flushBusy) else { return }
        unflushed = 0
        flushed = true
    }

    /// Runs `work` on `syncQueue` unless the last one queued under `busy` is still
    /// pending (one checkpoint, one flush at a time); says whether it was queued.
    private func enqueue(_ work: @escaping @Sendable () -> Void, unlessBusy busy: Locked<Bool>) -> Bool {
        guard busy.withLock({ value in defer { value = true }; return !value }) else { return false }
        syncQueue.async {
            work()
            busy.withLock { $0 = false }
        }
        return true
    }

    /// Removes resume state, durably, before the part file is reused for other bytes.
    private func dropState() {
        stateful = false
        guard checkpointed else { return }
        checkpointed = false
        let path = request.statePath
        let root = request.root
        let durable = engine.configuration.durable
        syncQueue.sync {
            if root.unlink(path), durable { root.syncFolder(Paths.parent(of: path)) }
        }
    }

    private func discardFiles() {
        request.root.unlink(request.statePath)
        request.root.unlink(request.partPath)
    }

    // MARK: End

    private func outcome(_ status: TransferOutcome.Status) -> TransferOutcome {
        TransferOutcome(
            status: status, length: total, bytesDownloaded: bytesThisRun, resumedFrom: resumedFrom,
            connections: max(peakConnections, 1), attempts: attempts, note: note, hasState: checkpointed)
    }

    private func complete() {
        guard !finished else { return }
        // Wait for any checkpoint or flush in flight so none lands after the caller
        // renames, and a failed one is known.
        if checkpointed || flushed { syncQueue.sync {} }
        if let failure = part?.failedSync {
            fail(failure)
            return
        }
        finished = true
        announce()
        request.observer?.prefixCompleted(upTo: total ?? 0)
        part = nil
        completion(outcome(.completed))
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
        stopWorkers()
        if keepingState && stateful {
            checkpoint(wait: true)
        } else {
            dropState()
            request.root.unlink(request.partPath)
        }
        finished = true
        part = nil
        completion(outcome(status))
    }

    /// Reports the item as never started: skipped (`--fail-fast`), or interrupted when
    /// a cancel stopped the run before its turn, so the run still counts as interrupted.
    func skip(cancelled: Bool = false) {
        finished = true
        completion(outcome(cancelled ? .cancelled : .skipped))
    }

    private func stopWorkers() {
        for worker in workers where worker.easy != nil {
            engine.detach(worker)
            worker.easy = nil
        }
        // The ranges stay with the workers so the final checkpoint still sees them.
    }
}
