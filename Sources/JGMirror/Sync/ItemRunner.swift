import CLinux
import DequeModule
import Foundation

/// Takes every item of a run from assessment to its final state: unchanged items
/// are settled from disk and the state database, the rest go through the engine, the
/// prefix hasher and placement. Results are collected by index, as compact rows, and
/// returned in plan order; what was learned about files already present (hashed, or
/// `304`) is recorded in batches, one transaction each.
final class ItemRunner: Sendable {
    private let items: [PlannedItem]
    private let options: SyncOptions
    private let engine: TransferEngine
    private let events: AsyncStream<SyncEvent>.Continuation
    /// The state database, being opened while the first items go ahead.
    private let opening: StateOpening
    /// The state database's records, by destination (empty without one), taken from
    /// `opening` when the first present file is looked at; dropped once
    /// every item has its result, before the results are put together.
    private let records = Locked<RecordTable?>(nil)
    /// What this run learned about files (placed, hashed, `304`), written in batches
    /// of `SyncOptions.learnedBatch`, the rest at the end.
    private let learned: RecordBatcher
    /// One-line problems with the state database, for the report.
    let warnings = Locked<[String]>([])
    /// Assessments of present files waiting for a conditional request, by index.
    private let presentFiles = Locked<[Int: ItemAssessment]>([:])
    private let placement: Placement
    /// Placed files' records, until the file system's clock has passed them.
    private let settling: RecordSettling?
    /// Where a finished download is verified (a small file hashed) and handed to
    /// placement: off the engine thread, whose time per item bounds how fast small
    /// files go, and not behind placement's syncs, which the next downloads do not
    /// wait for. It submits the next item, so at most `window` finished files (each
    /// holding up to `PrefixHasher.heldLimit` bytes) wait for it.
    private let finishing = BatchedQueue<@Sendable () -> Void>(label: "jgmirror.finishing") { jobs in jobs.forEach { $0() } }
    /// The root, opened once: every file below it is reached through this.
    private let root: RootDirectory
    /// Hashing of present files and second passes over part files, on all cores.
    private let hashing: BoundedWork
    private let state: Locked<State>
    /// Folders already created this run, so each is made once, not once per item.
    private let madeFolders = Locked(Set<String>())
    /// Resumed items fetched again from zero after their checksum failed, so each is
    /// retried once.
    private let refetched = Locked(Set<Int>())
    /// What each folder held before the run, for the walk's first look at an item;
    /// the walk takes it, and it is gone when the walk ends.
    private let listings: Locked<FolderListings>
    /// The `link:` items, by index: placed once every file has its result (SPEC §10b).
    private let links: [Int]
    /// The verified lists of `publish: true` sets: placed after the files, before the links.
    private let publisher: ListPublisher?
    /// The links earlier runs' `link:` items placed (destination → target), read from
    /// the state database the first time a file's destination is found to be a symlink.
    private let managedLinks = Locked<[String: String]?>(nil)

    private struct State {
        /// Compact until the end: a full `ItemResult` per item held for the whole run
        /// was most of what a large run's memory grew by.
        var rows: [ResultRow?]
        var remaining: Int
        /// After a cancel or a fail-fast stop no new item starts.
        var stopped = false
        var done: (@Sendable ([ResultRow?]) -> Void)?
        /// Items handed to the engine whose outcome has not come back.
        var submitted = 0
        /// Items to fetch that wait for room in the engine's queue, as
        /// `index << 1 | knownFresh`: a queued item costs four bytes here (a 32-bit
        /// entry in a ring buffer) instead of a request, a hasher and a transfer
        /// object in the engine.
        var queued = Deque<UInt32>()
    }

    /// Items handed to the engine at once: enough that a finished item's slot never
    /// waits for this class to submit the next one, few enough that a large run does
    /// not hold a request, hasher and transfer object per item before it starts.
    private let window: Int

    init(
        items: [PlannedItem], options: SyncOptions, engine: TransferEngine, events: AsyncStream<SyncEvent>.Continuation,
        root: RootDirectory, state opening: StateOpening, listings: FolderListings = FolderListings(),
        backup: BackupFolder? = nil, publishing lists: [PublishedList] = []
    ) {
        self.items = items
        publisher = lists.isEmpty ? nil : ListPublisher(lists: lists, root: root, durable: options.durable)
        self.listings = Locked(listings)
        self.root = root
        self.options = options
        self.engine = engine
        self.events = events
        self.opening = opening
        let warnings = self.warnings
        learned = RecordBatcher(
            store: { opening.store }, size: options.learnedBatch, warn: { line in warnings.withLock { $0.append(line) } },
            saved: options.savedLearned)
        let racyNs = options.quickCheck.racyWindowNs
        let settling = options.settlesPlacedRecords ? RecordSettling(root: root, records: learned, windowNs: racyNs) : nil
        self.settling = settling
        placement = Placement(
            durable: options.durable, root: root, records: learned, dataSync: options.engine.dataSync,
            beforeRecording: options.beforeRecording, backup: backup, settling: settling)
        // A few files per thread waiting keeps every thread busy while the walk stats
        // the next items.
        let threads = max(1, options.hashThreads)
        hashing = BoundedWork(threads: threads, limit: options.hashWindow ?? 4 * threads, onFull: options.hashWindowFull)
        links = items.indices.filter { items[$0].isLink }
        state = Locked(State(rows: Array(repeating: nil, count: items.count), remaining: items.count - links.count))
        window = max(32, 2 * options.jobs)
    }

    /// Processes every item; returns when each has a result.
    func run() async -> ReportItems {
        guard !items.isEmpty else { return ReportItems(rows: [], of: []) }
        var rows: [ResultRow?]
        if links.count < items.count {
            rows = await withCheckedContinuation { continuation in
                state.withLock { $0.done = { continuation.resume(returning: $0) } }
                // The walk stats every destination and waits for the hashing window: on a
                // thread of its own (see `Blocking`).
                Thread { self.walk() }.start()
            }
        } else {
            rows = Array(repeating: nil, count: items.count)
        }
        await Blocking.run {
            self.settling?.finish()
            self.learned.flush()
        }
        var published: [ItemResult] = []
        if let publisher {
            // After every file, before the links: a list never names a file not yet in place.
            let settled = rows
            let stopped = state.withLock { $0.stopped } || rows.contains { $0?.outcome.status == .interrupted }
            let outcome = await Blocking.run { publisher.publish(items: self.items, rows: settled, stopped: stopped) }
            for result in outcome.results { events.yield(.itemFinished(result)) }
            published = outcome.results
            warnings.withLock { $0 += outcome.warnings }
        }
        if !links.isEmpty {
            // After every file: a reader never follows a new link to a file not there yet.
            let settled = rows
            for (index, row) in await Blocking.run({ self.placeLinks(after: settled) }) { rows[index] = row }
        }
        var report = ReportItems(rows: rows, of: items)
        report.extra = published
        return report
    }

    /// Places every `link:` item once the files have their results (`rows`), and
    /// records the links in the state database. A link that would change is left as it
    /// is while a file below its target did not reach its place this run, so that it
    /// never leads readers to a half-made folder. Returns each link's row.
    private func placeLinks(after rows: [ResultRow?]) -> [(Int, ResultRow)] {
        // Stopped (fail-fast), or interrupted: the next run finishes the files and then
        // places the links.
        let stopped = state.withLock { $0.stopped } || rows.contains { $0?.outcome.status == .interrupted }
        let placedStatuses: Set<ItemStatus> = [.downloaded, .unchanged, .unverified]
        let unfinished = rows.indices.compactMap { index -> String? in
            guard let row = rows[index], !placedStatuses.contains(row.outcome.status) else { return nil }
            return items[index].dest
        }
        var results: [(Int, ResultRow)] = []
        var recorded: [(dest: String, target: String)] = []
        var changedFolders = Set<String>()
        for index in links {
            let item = items[index]
            guard let target = item.link else { continue }
            var result = result(item, status: .downloaded)
            let started = Date()
            if stopped {
                result.status = .skipped
            } else {
                do throws(TransferError) {
                    if try root.linkTarget(item.path) == target {
                        result.status = .unchanged
                        recorded.append((item.dest, target))
                    } else if let blocker = Self.unfinished(unfinished, below: target, of: item.dest) {
                        result.status = .skipped
                        result.note = "kept as it was: '\(blocker)', below its target, did not reach its place this run"
                    } else {
                        let folder = Paths.parent(of: item.path)
                        if !madeFolders.withLock({ $0.contains(folder) }) {
                            try root.makeFolders(folder)
                            madeFolders.withLock { _ = $0.insert(folder) }
                        }
                        // The part file's name: reserved, and never used by a link item otherwise.
                        try root.placeLink(item.path, target: target, temporary: item.partPath)
                        changedFolders.insert(folder)
                        recorded.append((item.dest, target))
                    }
                } catch {
                    result.status = .failed
                    result.error = ItemError(code: error.code, message: error.message)
                }
            }
            result.durationS = Date().timeIntervalSince(started)
            events.yield(.itemFinished(result))
            results.append((index, ResultRow(result, of: item)))
        }
        if options.durable { for folder in changedFolders { root.syncFolder(folder) } }
        if let failure = opening.store?.saveLinks(recorded) { warnings.withLock { $0.append(failure) } }
        return results
    }

    /// Whether `item`'s destination itself is a symlink that a `link:` item placed and
    /// that still points where it was made to (any other symlink stays `unsafe_path`).
    private func isManagedLink(_ item: PlannedItem) -> Bool {
        guard let current = try? root.linkTarget(item.path) else { return false }
        let managed = managedLinks.withLock { links in
            if links == nil { links = (try? opening.store?.links()) ?? [:] }
            return links?[item.dest]
        }
        return managed == current
    }

    /// The first of `dests` at or below the path a link at `dest` to `target` leads to.
    private static func unfinished(_ dests: [String], below target: String, of dest: String) -> String? {
        guard !dests.isEmpty, case .success(let resolved) = LinkTarget.resolve(target, dest: dest) else { return nil }
        return dests.first { resolved.isEmpty || $0 == resolved || $0.hasPrefix(resolved + "/") }
    }

    /// Assesses every item in plan order: settles it, queues the hashing of what is
    /// present, or hands it to the engine.
    private func walk() {
        let quickCheck = options.quickCheck
        let listings = self.listings.withLock { held in
            defer { held = FolderListings() }
            return held
        }
        for index in items.indices {
            let item = items[index]
            if item.isLink { continue }  // placed after the files, by `placeLinks`
            if let failure = item.failure {
                var result = result(item, status: .failed)
                result.error = failure
                record(index, result)
                continue
            }
            switch item.inspect(
                resume: options.resume, root: root, record: stateRecord(of: item), quickCheck: quickCheck, listings: listings)
            {
            case .decided(let assessment):
                decide(index, assessment)
            case .needsHashing(let size, let stat):
                // Hashing what is already there runs on all cores, beside the
                // transfers; the walk waits while a few files per core are queued.
                let root = root
                hashing.submit {
                    self.options.hashedFile?(item.dest)
                    self.decide(index, item.assessByHashing(size: size, stat: stat, root: root, record: self.stateRecord(of: item)))
                }
            case .unsafe where isManagedLink(item):
                // A link a former `link:` item placed, where a file goes now: the
                // verified file is renamed over it, as over any file.
                decide(index, ItemAssessment(action: .fetch))
            case .unsafe(let error):
                var result = result(item, status: .failed)
                result.error = ItemError(code: error.code, message: item.redactor.redact(error.message))
                record(index, result)
            }
        }
    }

    /// Remembers that the present file of `item` was just verified (or checked).
    private func learn(
        _ item: PlannedItem, stat: FileStat?, sha256: String?, sha512: String? = nil, validators: Validators? = nil, verifiedAt: Int64?
    ) {
        guard let stat, opening.store != nil else { return }
        // A file that changed while it was hashed is not recorded.
        guard root.status(item.path).map(FileStat.init) == stat else { return }
        let old = stateRecord(of: item)
        let record = FileRecord(
            dest: item.dest, stat: stat, sha256: sha256, sha512: sha512, etag: validators?.etag ?? old?.etag,
            lastModified: validators?.lastModified ?? old?.lastModified, url: item.displayURL, verifiedAt: verifiedAt,
            checkedAt: FileRecord.now())
        learned.add([record])
    }

    /// The state database's record of `item`'s destination.
    private func stateRecord(of item: PlannedItem) -> FileRecord? {
        records.withLock { records in
            if records == nil { records = opening.takeRecords() }
            return records?[item.dest]
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
            if !assessment.quick {
                learn(item, stat: assessment.stat, sha256: assessment.sha256, sha512: assessment.sha512, verifiedAt: FileRecord.now())
            }
            record(index, result)
        case .present:
            var result = result(item, status: .unverified)
            result.bytes = assessment.size
            record(index, result)
        case .link:
            preconditionFailure("link items are placed by placeLinks, never assessed by the walk")
        case .fetch, .resume, .check:
            // A present file that a conditional request may keep waits with its assessment.
            if assessment.action == .check { presentFiles.withLock { $0[index] = assessment } }
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
                    precondition(index < 1 << 31, "a plan holds fewer than 2^31 items")
                    state.queued.append(UInt32(index) << 1 | (knownFresh ? 1 : 0))
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
        let next = state.withLock { state -> UInt32? in
            guard let next = state.queued.popFirst() else {
                state.submitted -= 1
                return nil
            }
            return next
        }
        if let next { fetch(Int(next >> 1), knownFresh: next & 1 == 1) }
    }

    /// Sends the item to the engine; `note` explains why the item is fetched again,
    /// when it is, and a present file's assessment (`check`) makes the request conditional.
    /// `earlierBytes`: what this run already downloaded for it, in a pass it discarded.
    private func fetch(_ index: Int, knownFresh: Bool, note: String? = nil, earlierBytes: Int64 = 0) {
        let present = presentFiles.withLock { $0.removeValue(forKey: index) }
        let item = items[index]
        let hasher = PrefixHasher(path: item.partPath, root: root)
        let request = TransferRequest(
            id: index, sources: [item.url] + item.mirrors, root: root, partPath: item.partPath, statePath: item.statePath,
            expectedSize: item.size, connections: item.connections, retries: item.retries, minSegment: item.minSegment,
            timeout: item.timeout, headers: item.headers.map { "\($0.name): \($0.value)" },
            forwardHeaders: item.forwardHeaders, insecure: item.insecure,
            resume: options.resume, knownFresh: knownFresh, observer: hasher, sizeLimit: item.maxSize,
            conditions: present?.conditions ?? [], memoryLimit: Int64(PrefixHasher.heldLimit),
            stateURL: item.redactor.redact(url: item.url))
        let started = Date()
        engine.submit(request) { outcome in
            self.finishing.add {
                self.finish(index, outcome, hasher: hasher, started: started, note: note, present: present, earlierBytes: earlierBytes)
            }
        }
    }

    private func finish(
        _ index: Int, _ outcome: TransferOutcome, hasher: PrefixHasher, started: Date, note: String?, present: ItemAssessment?,
        earlierBytes: Int64
    ) {
        submitNext()
        let item = items[index]
        var result = result(item, status: .downloaded)
        result.bytes = outcome.length
        // Every byte received this run counts, a discarded pass's too (SPEC §8).
        result.bytesDownloaded = outcome.bytesDownloaded + earlierBytes
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
            result.error =
                options.runDeadline?.reached == true
                ? ItemError(code: .deadline, message: "stopped at the run's deadline (--max-duration); resume state kept")
                : ItemError(code: .interrupted, message: "stopped by a signal or cancel; resume state kept")
            result.durationS = elapsed()
            record(index, result)
        case .skipped:
            result.status = .skipped
            record(index, result)
        case .notModified:
            let old = stateRecord(of: item)
            result.status = .unchanged
            result.bytes = present?.size
            result.note = "not modified"
            result.sha256Actual = present?.sha256
            result.durationS = elapsed()
            learn(
                item, stat: present?.stat, sha256: present?.sha256, validators: outcome.validators,
                verifiedAt: present?.hashedAt ?? (present?.recordHolds == true ? old?.verifiedAt : nil))
            record(index, result)
        case .completed:
            let base = result
            if let body = outcome.body {
                // Held in memory, never written: hashed here, written by placement once verified.
                let digest = SHA256.hex(of: body).map { Result<String, VerifyError>.success($0) } ?? .failure(.noHasher)
                verify(index, base, digest, outcome, elapsed: elapsed)
                return
            }
            hasher.finish(length: outcome.length ?? 0) { digest in
                // The part file's last sync runs beside the hasher: go on once it has (on
                // its queue, never holding up the thread that called). Bytes it could not
                // make durable are not placed, and no resume state claims them.
                outcome.afterSyncs { failure in
                    guard let failure else {
                        self.verify(index, base, digest, outcome, elapsed: elapsed)
                        return
                    }
                    var result = base
                    self.root.unlink(item.partPath)
                    self.root.unlink(item.statePath)
                    result.status = .failed
                    result.error = ItemError(code: failure.code, message: item.redactor.redact(failure.message))
                    result.durationS = elapsed()
                    self.record(index, result)
                }
            }
        }
    }

    /// Checks a completed download's digests against the manifest, then places it or
    /// keeps its bytes aside.
    private func verify(
        _ index: Int, _ base: ItemResult, _ digest: Result<String, VerifyError>, _ outcome: TransferOutcome,
        elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        var result = base
        switch digest {
        case .failure(let error):
            if outcome.body == nil { root.unlink(item.partPath) }  // a held body made none
            result.status = .failed
            result.error = ItemError(code: .ioError, message: error.localizedDescription)
            result.durationS = elapsed()
            record(index, result)
        case .success(let actual):
            result.sha256Actual = actual
            if let expected = item.sha256, expected != actual, outcome.resumedFrom > 0,
                refetched.withLock({ $0.insert(index).inserted })
            {
                // Resumed bytes can come from another version of the file when the
                // server's validators (size and mtime) could not tell them apart:
                // fetch it once more from zero before calling it a mismatch.
                root.unlink(item.partPath)
                root.unlink(item.statePath)
                state.withLock { $0.submitted += 1 }
                fetch(
                    index, knownFresh: true,
                    note: "checksum failed after resuming (a change the validators could not show); fetched again from zero",
                    earlierBytes: base.bytesDownloaded)
                return
            }
            // Lists can give an item both digests (SHA256SUMS and SHA512SUMS): each must hold.
            if let expected = item.sha256, expected != actual {
                reportMismatch(index, result, "SHA-256 is \(actual), expected \(expected)", outcome, elapsed: elapsed)
                return
            }
            if let expected = item.sha512 {
                // A second pass over the part file (or the body held in memory), beside
                // the transfers: the streaming hasher computes SHA-256 only.
                let checked = result
                hashing.submitWithoutWaiting {
                    var result = checked
                    let digest =
                        outcome.body.map { SHA256.hex(of: $0, algorithm: .sha512) }
                        ?? (try? self.root.openFile(item.partPath, flags: O_RDONLY)).flatMap { fd in
                            defer { close(fd) }
                            return try? FileHasher.hex(fd: fd, path: item.partPath, algorithm: .sha512)
                        }
                    result.sha512Actual = digest
                    guard let digest, digest == expected else {
                        let difference = "SHA-512 is \(digest ?? "unreadable"), expected \(expected)"
                        self.reportMismatch(index, result, difference, outcome, elapsed: elapsed)
                        return
                    }
                    self.place(index, result, outcome, elapsed: elapsed)
                }
                return
            }
            place(index, result, outcome, elapsed: elapsed)
        }
    }

    /// Keeps a download whose digest is not the manifest's aside (`Placement.quarantine`)
    /// and reports it as a mismatch: `difference`, then where the bytes are.
    private func reportMismatch(
        _ index: Int, _ checked: ItemResult, _ difference: String, _ outcome: TransferOutcome,
        elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        let kept = Placement.quarantine(
            part: item.partPath, destination: item.path, state: item.statePath, root: root, contents: outcome.body)
        var result = checked
        result.status = .mismatch
        result.error = ItemError(code: .checksumMismatch, message: "\(difference); \(kept)")
        result.durationS = elapsed()
        record(index, result)
    }

    /// Renames verified bytes onto the destination and records the item.
    /// Places the verified part file and records it (its SHA-256 and the remote's
    /// validators) in the state database with the batch.
    private func place(
        _ index: Int, _ verified: ItemResult, _ outcome: TransferOutcome, elapsed: @escaping @Sendable () -> Double
    ) {
        let item = items[index]
        let state = outcome.hasState ? item.statePath : nil
        let validators = outcome.validators
        let placed = FileRecord(
            dest: item.dest, stat: FileStat(size: 0, mtimeNs: 0, ctimeNs: 0, inode: 0, device: 0), sha256: verified.sha256Actual,
            sha512: verified.sha512Actual, etag: validators.etag, lastModified: validators.lastModified, url: item.displayURL, verifiedAt: nil, checkedAt: 0)
        let commit = Placement.Commit(
            part: item.partPath, destination: item.path, state: state, record: placed, synced: outcome.dataSynced,
            contents: outcome.body
        ) { error in
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
            connections: 0, attempts: 0, sha256Expected: item.sha256, sha512Expected: item.sha512, insecure: item.insecure,
            link: item.link)
    }

    private func record(_ index: Int, _ result: ItemResult) {
        events.yield(.itemFinished(result))
        let failedFast = options.failFast && (result.status == .failed || result.status == .mismatch)
        let row = ResultRow(result, of: items[index])
        let finished = state.withLock { state -> (@Sendable ([ResultRow?]) -> Void, [ResultRow?])? in
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
            // The records' pages go back to the system: freed in the middle of the
            // heap, they would stay in the process otherwise.
            records.withLock { $0 = RecordTable() }
            _ = opening.takeRecords()
            jg_release_free_memory()
            done(rows)
        }
    }
}
