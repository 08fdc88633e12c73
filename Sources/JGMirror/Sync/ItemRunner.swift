import CLinux
import Foundation

/// Takes every item of a run from assessment to its final state: unchanged items
/// are settled from disk and the state database, the rest go through the engine, the
/// prefix hasher and placement. Results are collected by index, as compact rows, and
/// returned in plan order; what was learned about files already present (hashed, or
/// `304`) is recorded in batches, one transaction each.
final class ItemRunner: Sendable {
    let items: [PlannedItem]
    let options: SyncOptions
    let engine: TransferEngine
    let events: AsyncStream<SyncEvent>.Continuation
    /// The state database, being opened while the first items go ahead.
    let opening: StateOpening
    /// The state database's records, by destination (empty without one), taken from
    /// `opening` when the first present file is looked at; dropped once
    /// every item has its result, before the results are put together.
    let records = Locked<RecordTable?>(nil)
    /// What this run learned about files (placed, hashed, `304`), written in batches
    /// of `SyncOptions.learnedBatch`, the rest at the end.
    let learned: RecordBatcher
    /// One-line problems with the state database, for the report.
    let warnings = Locked<[String]>([])
    /// Assessments of present files waiting for a conditional request, by index.
    let presentFiles = Locked<[Int: ItemAssessment]>([:])
    let placement: Placement
    /// Placed files' records, until the file system's clock has passed them.
    let settling: RecordSettling?
    /// Where a finished download is verified (a small file hashed) and handed to
    /// placement: off the engine thread, whose time per item bounds how fast small
    /// files go, and not behind placement's syncs, which the next downloads do not
    /// wait for. It submits the next item, so at most `window` finished files (each
    /// holding up to `PrefixHasher.heldLimit` bytes) wait for it.
    let finishing: WorkPool.Lane<@Sendable () -> Void>
    /// The root, opened once: every file below it is reached through this.
    let root: RootDirectory
    /// The run's threads off the engine's: the walk, hashing, finishing, placement.
    let pool: WorkPool
    /// Hashing of present files and second passes over part files, on all cores.
    let hashing: WorkPool.Window
    let state: Locked<State>
    /// Folders already created this run, so each is made once, not once per item.
    let madeFolders = Locked(Set<String>())
    /// Resumed items fetched again from zero after their checksum failed, so each is
    /// retried once.
    let refetched = Locked(Set<Int>())
    /// What each folder held before the run, for the walk's first look at an item;
    /// the walk takes it, and it is gone when the walk ends.
    let listings: Locked<FolderListings>
    /// The `link:` items, by index: placed once every file has its result
    /// (docs/publishing.md#ordered).
    let links: [Int]
    /// Where a file a link replaces is kept first (`--backup-dir`).
    let backup: BackupFolder?
    /// Where bytes that fail verification go (nil: beside the destination, `get`).
    let quarantine: Quarantine?
    /// The folders of sets published as snapshots of their own (without their `/`):
    /// links jgmirror swaps, which a link's target goes through as folders.
    let snapshotSetFolders: Set<String>
    /// What sets place in order after their files (their verified lists, an apt
    /// suite's indexes and `Release` files), before the links.
    let publisher: GroupPublisher?
    /// Items whose placement waits for an earlier phase of their group: verified, their
    /// bytes wait in `held` for `publisher`.
    let gated: Set<Int>
    /// Items the server may lack (`PublishedFile.optional`): a 404 or 410 makes them
    /// `not_served`, no failure.
    let optional: Set<Int>
    /// The placements of gated items that verified, by index.
    let held = Locked<[Int: HeldPlacement]>([:])
    /// The links earlier runs' `link:` items placed (destination → target), read from
    /// the state database the first time a file's destination is found to be a symlink.
    let managedLinks = Locked<[String: String]?>(nil)

    struct State {
        /// Compact until the end: a full `ItemResult` per item held for the whole run
        /// was most of what a large run's memory grew by.
        var rows: [ResultRow?]
        var remaining: Int
        /// After a cancel or a fail-fast stop no new item starts.
        var stopped = false
        var done: (@Sendable ([ResultRow?]) -> Void)?
        /// Items handed to the engine whose outcome has not come back.
        var submitted = 0
        /// Items to fetch that wait for room in the engine's queue, largest first.
        var queued = FetchQueue()
    }

    /// Items handed to the engine at once: enough that a finished item's slot never
    /// waits for this class to submit the next one, few enough that a large run does
    /// not hold a request, hasher and transfer object per item before it starts.
    let window: Int

    init(
        items: [PlannedItem], options: SyncOptions, engine: TransferEngine, events: AsyncStream<SyncEvent>.Continuation,
        root: RootDirectory, pool: WorkPool, state opening: StateOpening, listings: FolderListings = FolderListings(),
        backup: BackupFolder? = nil, quarantine: Quarantine? = nil, publishing groups: [PublishGroup] = [],
        snapshotSetFolders: Set<String> = []
    ) {
        self.items = items
        self.snapshotSetFolders = snapshotSetFolders
        self.backup = backup
        self.quarantine = quarantine
        publisher = groups.isEmpty ? nil : GroupPublisher(groups: groups, root: root, durable: options.durable, backup: backup)
        gated = Self.gatedItems(items, groups: groups)
        optional = Self.optionalItems(items, groups: groups)
        self.listings = Locked(listings)
        self.root = root
        self.pool = pool
        finishing = WorkPool.Lane(on: pool) { jobs in
            for job in jobs { job() }
        }
        self.options = options
        self.engine = engine
        self.events = events
        self.opening = opening
        let warnings = self.warnings
        learned = RecordBatcher(
            on: pool, store: { opening.store }, size: options.learnedBatch,
            warn: { line in warnings.withLock { $0.append(line) } },
            saved: options.savedLearned)
        let racyNs = options.quickCheck.racyWindowNs
        let settling = options.settlesPlacedRecords ? RecordSettling(root: root, records: learned, windowNs: racyNs) : nil
        self.settling = settling
        placement = Placement(
            durable: options.durable, root: root, pool: pool, records: learned, dataSync: options.engine.dataSync,
            beforeRecording: options.beforeRecording, backup: backup, settling: settling)
        // A few files per thread waiting keeps every thread busy while the walk stats
        // the next items.
        hashing = WorkPool.Window(
            on: pool, limit: options.hashWindow ?? 4 * pool.computingThreads, onFull: options.hashWindowFull)
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
                // The walk stats every destination and waits for the hashing window.
                pool.submit(.blocking) { self.walk() }
            }
        } else {
            rows = Array(repeating: nil, count: items.count)
        }
        await pool.run {
            self.settling?.finish()
            self.learned.flush()
        }
        var published: [ItemResult] = []
        if let publisher {
            // After every file, before the links: a list never names a file not yet in place.
            let settled = rows
            let stopped = state.withLock { $0.stopped } || rows.contains { $0?.outcome.status == .interrupted }
            let outcome = await pool.run {
                publisher.publish(
                    GroupPublisher.Items(items: self.items, rows: settled, release: self.release, drop: self.drop),
                    stopped: stopped)
            }
            for result in outcome.results { events.yield(.itemFinished(result)) }
            for (index, result) in outcome.rows { rows[index] = ResultRow(result, of: items[index]) }
            published = outcome.results
            warnings.withLock { $0 += outcome.warnings }
        }
        // After every file: a reader never follows a new link to a file not there yet.
        // Without link items, the links earlier runs placed are still looked at.
        let settled = rows
        let placed = await pool.run { self.placeLinks(after: settled) }
        for (index, row) in placed.rows { rows[index] = row }
        var report = ReportItems(rows: rows, of: items)
        report.extra = published + placed.removed
        return report
    }

    /// Assesses every item in plan order: settles it, queues the hashing of what is
    /// present, or hands it to the engine.
    func walk() {
        let quickCheck = options.quickCheck
        let listings = self.listings.withLock { held in
            defer { held = FolderListings() }
            return held
        }
        // One folder open at a time, for every item in it (a plan lists them together).
        let files = RootDirectory.Cursor(root)
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
                resume: options.resume, files: files, record: stateRecord(of: item), quickCheck: quickCheck, listings: listings)
            {
            case .decided(let assessment):
                decide(index, assessment)
            case .needsHashing(let size, let stat):
                // Hashing what is already there runs on all cores, beside the
                // transfers; the walk waits while a few files per core are queued.
                let root = root
                hashing.submit {
                    self.options.hashedFile?(item.dest)
                    self.decide(
                        index, item.assessByHashing(size: size, stat: stat, root: root, record: self.stateRecord(of: item)))
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
    func learn(
        _ item: PlannedItem, stat: FileStat?, sha256: String?, sha512: String? = nil, validators: Validators? = nil,
        verifiedAt: Int64?
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
    func stateRecord(of item: PlannedItem) -> FileRecord? {
        records.withLock { records in
            if records == nil { records = opening.takeRecords() }
            return records?[item.dest]
        }
    }

    /// Stops starting items (cancel, fail-fast).
    func stop() { state.withLock { $0.stopped = true } }

    func decide(_ index: Int, _ assessment: ItemAssessment) {
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
                learn(
                    item, stat: assessment.stat, sha256: assessment.sha256, sha512: assessment.sha512,
                    verifiedAt: FileRecord.now())
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
                    state.queued.append(index, knownFresh: knownFresh, size: item.size)
                    return false
                }
                state.submitted += 1
                return true
            }
            if now { fetch(index, knownFresh: knownFresh) }
        }
    }

    /// An item's outcome came back from the engine: the next queued item takes its place.
    func submitNext() {
        let next = state.withLock { state -> (index: Int, knownFresh: Bool)? in
            guard let next = state.queued.popFirst() else {
                state.submitted -= 1
                return nil
            }
            return next
        }
        if let next { fetch(next.index, knownFresh: next.knownFresh) }
    }

    /// Sends the item to the engine; `note` explains why the item is fetched again,
    /// when it is, and a present file's assessment (`check`) makes the request conditional.
    /// `earlier`: the result of a pass this run discarded, whose bytes count too.
    func fetch(_ index: Int, knownFresh: Bool, note: String? = nil, earlier: ItemResult? = nil) {
        let present = presentFiles.withLock { $0.removeValue(forKey: index) }
        let item = items[index]
        let hasher = PrefixHasher(path: item.partPath, root: root, pool: pool)
        let request = TransferRequest(
            id: index, sources: [item.url] + item.mirrors, root: root, partPath: item.partPath, statePath: item.statePath,
            expectedSize: item.size, options: item.options, resume: options.resume, knownFresh: knownFresh, observer: hasher,
            conditions: present?.conditions ?? [], memoryLimit: Int64(PrefixHasher.heldLimit),
            stateURL: item.redactor.redact(url: item.url))
        let started = Date()
        engine.submit(request) { outcome in
            self.finishing.add {
                self.finish(
                    index, outcome, hasher: hasher, started: started, note: note, present: present, earlier: earlier)
            }
        }
    }

    func result(_ item: PlannedItem, status: ItemStatus) -> ItemResult {
        ItemResult(
            dest: item.dest, url: item.displayURL, tag: item.tag, tags: item.tags, status: status,
            connections: 0, attempts: 0, sha256Expected: item.sha256, sha512Expected: item.sha512,
            insecure: item.options.insecure,
            link: item.link)
    }

    /// Records item `index`'s result, and says so in an event unless `announced` is
    /// false (an item whose bytes wait for their phase says it once they are placed).
    func record(_ index: Int, _ result: ItemResult, announced: Bool = true) {
        let result = optional.contains(index) ? Self.notServed(result) : result
        if announced, options.announcesSettledItems || !result.status.isSettled { events.yield(.itemFinished(result)) }
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
