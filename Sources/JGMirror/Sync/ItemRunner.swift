import Foundation

/// Takes every item of a run from assessment to its final state: unchanged items
/// are settled from disk, the rest go through the engine, the prefix hasher and
/// placement. Results are collected by index and returned in plan order.
final class ItemRunner: Sendable {
    private let items: [PlannedItem]
    private let options: SyncOptions
    private let engine: TransferEngine
    private let events: AsyncStream<SyncEvent>.Continuation
    private let refetchUnverified: Bool
    private let placement: Placement
    /// The root, opened once: every file below it is reached through this.
    private let root: RootDirectory
    private let hashing: OperationQueue
    private let state: Locked<State>
    /// Folders already created this run, so each is made once, not once per item.
    private let madeFolders = Locked(Set<String>())
    /// Resumed items fetched again from zero after their checksum failed, so each is
    /// retried once.
    private let refetched = Locked(Set<Int>())

    private struct State {
        /// Compact until the end: a full `ItemResult` per item held for the whole run
        /// was most of what a large run's memory grew by.
        var rows: [ResultRow?]
        var remaining: Int
        /// After a cancel or a fail-fast stop no new item starts.
        var stopped = false
        var done: (@Sendable ([ItemResult]) -> Void)?
        /// Items handed to the engine whose outcome has not come back.
        var submitted = 0
        /// Items to fetch that wait for room in the engine's queue, as
        /// `index << 1 | knownFresh`: a queued item costs eight bytes here instead of
        /// a request, a hasher and a transfer object in the engine.
        var queued = FIFO<Int>()
    }

    /// Items handed to the engine at once: enough that a finished item's slot never
    /// waits for this class to submit the next one, few enough that a large run does
    /// not hold a request, hasher and transfer object per item before it starts.
    private let window: Int

    init(
        items: [PlannedItem], options: SyncOptions, engine: TransferEngine, events: AsyncStream<SyncEvent>.Continuation,
        refetchUnverified: Bool, root: RootDirectory
    ) {
        self.items = items
        self.root = root
        self.options = options
        self.engine = engine
        self.events = events
        self.refetchUnverified = refetchUnverified
        placement = Placement(durable: options.durable, root: root)
        hashing = OperationQueue()
        hashing.maxConcurrentOperationCount = max(1, options.hashThreads)
        state = Locked(State(rows: Array(repeating: nil, count: items.count), remaining: items.count))
        window = max(32, 2 * options.jobs)
    }

    /// Processes every item; returns when each has a result.
    func run() async -> [ItemResult] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { continuation in
            state.withLock { $0.done = { continuation.resume(returning: $0) } }
            for index in items.indices {
                let item = items[index]
                if let failure = item.failure {
                    var result = result(item, status: .failed)
                    result.error = failure
                    record(index, result)
                    continue
                }
                switch item.inspect(resume: options.resume, root: root) {
                case .decided(let assessment):
                    decide(index, assessment)
                case .needsHashing(let size):
                    // Hashing what is already there runs on all cores, beside the transfers.
                    let root = root
                    hashing.addOperation { self.decide(index, item.assessByHashing(size: size, root: root)) }
                case .unsafe(let error):
                    var result = result(item, status: .failed)
                    result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
                    record(index, result)
                }
            }
        }
    }

    /// Stops starting items (cancel, fail-fast).
    func stop() { state.withLock { $0.stopped = true } }

    private func decide(_ index: Int, _ assessment: ItemAssessment) {
        let item = items[index]
        if state.withLock({ $0.stopped }) {
            record(index, result(item, status: .skipped))
            return
        }
        switch assessment.action {
        case .unchanged:
            var result = result(item, status: .unchanged)
            result.bytes = assessment.size
            result.sha256Actual = assessment.sha256
            result.sha512Actual = assessment.sha512
            record(index, result)
        case .present where !refetchUnverified:
            var result = result(item, status: .unverified)
            result.bytes = assessment.size
            record(index, result)
        default:
            // The folder is made now, so that an item fed to the engine later (from the
            // engine thread) needs no file system work before its request.
            let folder = Paths.parent(of: item.path)
            do {
                if !madeFolders.withLock({ $0.contains(folder) }) {
                    try root.makeFolders(folder)
                    madeFolders.withLock { _ = $0.insert(folder) }
                }
            } catch {
                var result = result(item, status: .failed)
                result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
                record(index, result)
                return
            }
            let knownFresh = assessment.noResumeState
            let now = state.withLock { state -> Bool in
                guard state.submitted < window else {
                    state.queued.append(index << 1 | (knownFresh ? 1 : 0))
                    return false
                }
                state.submitted += 1
                return true
            }
            if now { fetch(index, knownFresh: knownFresh) }
        }
    }

    /// An item's outcome came back from the engine: the next queued item takes its place.
    private func submitNext() {
        let next = state.withLock { state -> Int? in
            guard let next = state.queued.popFirst() else {
                state.submitted -= 1
                return nil
            }
            return next
        }
        if let next { fetch(next >> 1, knownFresh: next & 1 == 1) }
    }

    /// `note` explains why the item is fetched again, when it is.
    private func fetch(_ index: Int, knownFresh: Bool, note: String? = nil) {
        let item = items[index]
        let hasher = PrefixHasher(path: item.partPath, root: root)
        let request = TransferRequest(
            id: index, sources: [item.url] + item.mirrors, root: root, partPath: item.partPath, statePath: item.statePath,
            expectedSize: item.size, connections: item.connections, retries: item.retries, minSegment: item.minSegment,
            timeout: item.timeout, headers: item.headers.map { "\($0.name): \($0.value)" },
            forwardHeaders: item.forwardHeaders, insecure: item.insecure,
            resume: options.resume, knownFresh: knownFresh, observer: hasher, sizeLimit: item.maxSize)
        let started = Date()
        // On the engine thread: a small file's digest is ready by now and placement
        // queues the rest, so no other thread needs waking up for it.
        engine.submit(request) { outcome in self.finish(index, outcome, hasher: hasher, started: started, note: note) }
    }

    private func finish(_ index: Int, _ outcome: TransferOutcome, hasher: PrefixHasher, started: Date, note: String?) {
        submitNext()
        let item = items[index]
        var result = result(item, status: .downloaded)
        result.bytes = outcome.length
        result.bytesDownloaded = outcome.bytesDownloaded
        result.resumedFrom = outcome.resumedFrom
        result.connections = outcome.connections
        result.attempts = outcome.attempts
        result.note = (outcome.note ?? note).map { item.redactor.redact($0) }
        let elapsed: @Sendable () -> Double = { Date().timeIntervalSince(started) }
        switch outcome.status {
        case .failed(let error):
            result.status = .failed
            result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
            result.durationS = elapsed()
            record(index, result)
        case .cancelled:
            result.status = .interrupted
            result.error = ItemError(code: .interrupted, message: "stopped by a signal or cancel; resume state kept")
            result.durationS = elapsed()
            record(index, result)
        case .skipped:
            result.status = .skipped
            record(index, result)
        case .completed:
            let base = result
            hasher.finish(length: outcome.length ?? 0) { digest in
                var result = base
                switch digest {
                case .failure(let error):
                    self.root.unlink(item.partPath)
                    result.status = .failed
                    result.error = ItemError(code: .ioError, message: error.localizedDescription)
                    result.durationS = elapsed()
                    self.record(index, result)
                case .success(let actual):
                    result.sha256Actual = actual
                    if let expected = item.sha256, expected != actual, outcome.resumedFrom > 0,
                        self.refetched.withLock({ $0.insert(index).inserted })
                    {
                        // Resumed bytes can come from another version of the file when the
                        // server's validators (size and mtime) could not tell them apart:
                        // fetch it once more from zero before calling it a mismatch.
                        self.root.unlink(item.partPath)
                        self.root.unlink(item.statePath)
                        self.state.withLock { $0.submitted += 1 }
                        self.fetch(
                            index, knownFresh: true,
                            note: "checksum failed after resuming (a change the validators could not show); fetched again from zero")
                        return
                    }
                    if let expected = item.sha512 {
                        // A second pass over the part file, beside the transfers: the
                        // streaming hasher computes SHA-256 only.
                        let checked = result
                        self.hashing.addOperation {
                            var result = checked
                            let digest = (try? self.root.openFile(item.partPath, flags: O_RDONLY)).flatMap { fd in
                                defer { close(fd) }
                                return try? FileHasher.hex(fd: fd, path: item.partPath, algorithm: .sha512)
                            }
                            result.sha512Actual = digest
                            guard let digest, digest == expected else {
                                let bad = Placement.quarantine(
                                    part: item.partPath, destination: item.path, state: item.statePath, root: self.root)
                                result.status = .mismatch
                                result.error = ItemError(
                                    code: .checksumMismatch,
                                    message: "SHA-512 is \(digest ?? "unreadable"), the manifest expects \(expected); bytes kept in \(bad)")
                                result.durationS = elapsed()
                                self.record(index, result)
                                return
                            }
                            self.place(index, result, hasState: outcome.hasState, elapsed: elapsed)
                        }
                        return
                    }
                    if let expected = item.sha256, expected != actual {
                        let bad = Placement.quarantine(
                            part: item.partPath, destination: item.path, state: item.statePath, root: self.root)
                        result.status = .mismatch
                        result.error = ItemError(
                            code: .checksumMismatch,
                            message: "SHA-256 is \(actual), the manifest expects \(expected); bytes kept in \(bad)")
                        result.durationS = elapsed()
                        self.record(index, result)
                        return
                    }
                    self.place(index, result, hasState: outcome.hasState, elapsed: elapsed)
                }
            }
        }
    }

    /// Renames verified bytes onto the destination and records the item.
    private func place(_ index: Int, _ verified: ItemResult, hasState: Bool, elapsed: @escaping @Sendable () -> Double) {
        let item = items[index]
        let state = hasState ? item.statePath : nil
        let commit = Placement.Commit(part: item.partPath, destination: item.path, state: state) { error in
            var result = verified
            if let error {
                result.status = .failed
                result.error = ItemError(code: error.code, message: error.message)
            } else {
                result.status = item.hasChecksum ? .downloaded : .unverified
            }
            result.durationS = elapsed()
            self.record(index, result)
        }
        placement.commit(commit)
    }

    private func result(_ item: PlannedItem, status: ItemStatus) -> ItemResult {
        ItemResult(
            dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status,
            connections: 0, attempts: 0, sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.insecure)
    }

    private func record(_ index: Int, _ result: ItemResult) {
        events.yield(.itemFinished(result))
        let failedFast = options.failFast && (result.status == .failed || result.status == .mismatch)
        let row = ResultRow(result, of: items[index])
        let finished = state.withLock { state -> (@Sendable ([ItemResult]) -> Void, [ResultRow?])? in
            state.rows[index] = row
            state.remaining -= 1
            if failedFast { state.stopped = true }
            guard state.remaining == 0, let done = state.done else { return nil }
            state.done = nil
            var rows: [ResultRow?] = []
            swap(&rows, &state.rows)
            return (done, rows)
        }
        if failedFast { engine.skipQueued() }
        if let (done, rows) = finished {
            var results: [ItemResult] = []
            results.reserveCapacity(rows.count)
            for (index, row) in rows.enumerated() { results.append(row!.result(for: items[index])) }
            done(results)
        }
    }
}
