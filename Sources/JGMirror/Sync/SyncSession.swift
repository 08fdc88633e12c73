import Foundation

/// Runs a plan: fetches what is missing or stale, verifies, places, and returns the
/// report model (docs/sync.md). The library's main entry point; the CLI is a thin layer
/// over it.
///
/// ```swift
/// let manifest = try Manifest.load(path: "mirror.yaml")
/// let session = SyncSession(plan: Plan(manifest: manifest))
/// Task { for await event in session.events { print(event) } }
/// let report = try await session.run()
/// ```
public final class SyncSession: Sendable {
    /// Item events in order: started, progress…, finished. Ends when `run` returns, or
    /// at once when `SyncOptions.emitsEvents` is off.
    public let events: AsyncStream<SyncEvent>
    private let continuation: AsyncStream<SyncEvent>.Continuation
    private let plan: Plan
    let options: SyncOptions
    private let command: RunCommand
    /// Hold `ROOT/.jgmirror/` (locks and state database); one-off downloads do not.
    private let usesState: Bool
    private let control = Locked<Control>(Control())
    /// Lines about checksums files that could not be cached.
    private let listWarnings = Locked<[String]>([])

    private struct Control {
        var engine: TransferEngine?
        /// Set by `cancel`: whether to clear state.
        var cancel: Bool?
    }

    /// A sync of `plan` under `options`.
    public convenience init(plan: Plan, options: SyncOptions = SyncOptions()) {
        self.init(plan: plan, options: options, command: .sync, usesState: true)
    }

    init(plan: Plan, options: SyncOptions, command: RunCommand, usesState: Bool) {
        self.plan = plan
        deadline = options.maxDuration == nil ? nil : options.runDeadline
        self.options = options
        self.command = command
        self.usesState = usesState
        (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .unbounded)
        if !options.emitsEvents { continuation.finish() }
    }

    /// Stops every transfer. Resume state is kept (the next run continues) unless
    /// `clearingState`, which deletes part files and state (JGDownloadOperation's
    /// cancel vs cancelAndClearFiles). Safe from any thread, at any time.
    public func cancel(clearingState: Bool = false) {
        let engine = control.withLock { control -> TransferEngine? in
            control.cancel = clearingState || (control.cancel ?? false)
            return control.engine
        }
        engine?.cancel(clearing: clearingState)
    }

    /// Whether `cancel` was called.
    public var isCancelled: Bool { control.withLock { $0.cancel != nil } }

    /// Whether the run was stopped at its `--max-duration` rather than by a signal or
    /// a caller's cancel.
    public var reachedDeadline: Bool { deadline?.reached ?? false }
    private let deadline: RunDeadline?

    /// Runs the plan to the end (or to a cancel) and returns the report.
    ///
    /// Throws only for what stops a run as a whole: another run holds the tree, the
    /// root cannot be made, a destination escapes through a symlink, `--delete` would
    /// remove more than `--max-delete` or everything, `--backup-dir` is unusable, or a
    /// checksums list contradicts the manifest. Item and list failures are in the
    /// report; a run with any of them deletes nothing (`delete_skipped`).
    public func run() async throws(SyncError) -> RunReport {
        defer {
            continuation.finish()
            deadline?.endRun()
        }
        let started = Date()
        // Steps that can block for long (the tree, the database, syncs) run on the
        // run's own threads, never on Swift's shared ones.
        let pool = WorkPool(computingThreads: options.hashThreads)
        defer { pool.close() }
        let identity = await pool.run { [plan] in Self.identity(of: plan) }
        var plan = self.plan
        if options.delete, plan.isFiltered {
            throw .usage(.deleteUnderFilter)
        }
        do {
            try FileManager.default.createDirectory(atPath: plan.root, withIntermediateDirectories: true)
        } catch {
            throw .local("cannot create root \(plan.root): \(error.localizedDescription)")
        }
        let folder = usesState ? try StateFolder(root: plan.root, shard: plan.shard) : nil
        defer { withExtendedLifetime(folder) {} }
        // Under snapshot publishing the run works in the snapshot being built; the
        // state database, the lists' cache and `current` stay at the root.
        let stateRoot = plan.root
        // Made before anything else changes the tree: a backup folder that cannot be
        // (the root, inside it, another file system) stops the run untouched.
        let backup = try options.backupDir.map { directory throws(SyncError) in
            try BackupFolder(directory: directory, root: stateRoot, started: started)
        }
        defer { backup?.removeIfEmpty() }
        let publishing = usesState ? try Self.publishMode(plan, options: options) : .ordered
        if usesState { try Self.checkSetLinks(plan, mode: publishing) }
        let snapshot = publishing == .snapshot ? try await Self.prepareSnapshot(&plan, options: options, pool: pool) : nil
        // Sets published as snapshots of their own, in a run that is not one snapshot.
        let setSnapshots =
            usesState && publishing == .ordered
            ? try await Self.prepareSetSnapshots(&plan, options: options, pool: pool) : []
        let prepared = (snapshot.map { [$0] } ?? []) + setSnapshots.map(\.prepared)
        // The state database opens on a thread of the pool while the tree is looked at,
        // the engine starts and the first items go (`StateOpening`).
        let state: StateOpening
        if let path = folder?.path {
            let (timeout, before, window) = (options.stateBusyTimeout, options.beforeStateOpens, options.quickCheck.racyWindowNs)
            state = StateOpening(on: pool) {
                before?()
                return Self.openState(folder: path, busyTimeout: timeout, snapshots: prepared, racyWindowNs: window)
            }
        } else {
            state = StateOpening(.none())
        }
        // Closed before the run returns, or once open when it stops early: every write
        // (placements, what was learned, pruned records) is over by then.
        defer { state.close() }
        let listings: FolderListings
        do { listings = try RootConfinement.check(plan) } catch { throw .manifest(error) }
        let root: RootDirectory
        do { root = try RootDirectory(path: plan.root) } catch { throw .local(error.message) }
        guard plan.manifest.sets.isEmpty else {
            throw .manifest(
                ManifestError(
                    file: plan.manifest.path, location: plan.manifest.sets[0].location,
                    message: "the manifest's sets are not expanded; call Manifest.expandSets before building the plan"))
        }
        let items = plan.items
        let continuation = self.continuation
        // With nobody listening, an item's start and progress are not turned into events.
        var forward: @Sendable (TransferEvent) -> Void = { _ in }
        if options.emitsEvents {
            forward = { event in SyncSession.forward(event, items: items, to: continuation) }
        }
        let engine: TransferEngine
        do {
            var configuration = options.engineConfiguration
            configuration.apply(plan.manifest.hosts, origins: plan.manifest.originHosts)
            engine = try TransferEngine(configuration: configuration, onEvent: forward)
        } catch {
            throw .local(error.message)
        }
        defer { engine.shutdown() }
        // At the deadline the run stops as on SIGINT: resume state kept, report written.
        let stopAtDeadline = engine.configuration.runDeadline.map { run in
            run.deadline.schedule(at: run.at) { [self] in cancel() }
        }
        defer { stopAtDeadline?.cancel() }
        if let clearing = control.withLock({ control -> Bool? in
            control.engine = engine
            return control.cancel
        }) {
            engine.cancel(clearing: clearing)
        }
        var prune: Deletions?
        if options.delete {
            if plan.items.isEmpty, plan.manifest.listFailures.isEmpty { throw .usage(.deleteEverything) }
            prune = try await planDeletions(&plan, sets: setSnapshots, pool: pool)
        }

        if !plan.manifest.checksums.isEmpty {
            try await applyChecksumFiles(to: &plan, engine: engine, cacheRoot: stateRoot)
        }
        if options.requireChecksums { try plan.requireChecksums() }
        // Rejected bytes are kept in the state folder, and an older version's beside
        // their destination are moved there (docs/safety.md#quarantine).
        let quarantine = folder.flatMap { try? Quarantine(stateFolder: $0.path) }
        var warnings = await pool.run { [items = plan.items] in
            quarantine?.adoptLegacyFiles(of: items, listings: listings, root: root) ?? []
        }
        let run = ItemRunner(
            items: plan.items, options: options, engine: engine, events: continuation, root: root, pool: pool,
            state: state, listings: listings, backup: backup, quarantine: quarantine,
            publishing: plan.manifest.publishedLists, snapshotSetFolders: Set(plan.manifest.snapshotSets.map(\.scope)))
        var results = await run.run()
        let listFailures = plan.manifest.listFailures.map(\.result)
        for result in listFailures { continuation.yield(.itemFinished(result)) }
        results.extra += listFailures
        // A set whose list shrank past the share fails alone, before the deletions.
        for result in prune?.shrunk ?? [] { continuation.yield(.itemFinished(result)) }
        results.extra += prune?.shrunk ?? []
        let (store, openWarnings) = await pool.run { (state.store, state.warnings) }
        warnings = openWarnings + warnings
        if let prune {
            let (deletions, failure) = await delete(prune, plan: plan, results: results, store: store, backup: backup, pool: pool)
            if let failure { warnings.append(failure) }
            for result in deletions { continuation.yield(.itemFinished(result)) }
            results.extra += deletions
        }
        let sets = await Self.finishSetSnapshots(
            setSnapshots, results: results, cancelled: isCancelled, store: store, options: options, started: started, pool: pool)
        for result in sets.failed { continuation.yield(.itemFinished(result)) }
        results.extra += sets.failed
        warnings += sets.warnings
        var snapshotOutcome: SnapshotOutcome?
        if publishing == .snapshot {
            let unclean = Self.uncleanRun(
                results, listFailures: listFailures.count, shrunkSets: prune?.shrunk.count ?? 0, cancelled: isCancelled)
            let (outcome, line) = try await Self.finishSnapshot(
                root: stateRoot, unclean: unclean, changed: snapshot?.differs == true || results.changeTree,
                ranOutOfSpace: results.contains(failure: .diskFull), keep: Self.keptSnapshots(plan, options: options),
                files: plan.items.count, store: store, options: options, started: started, pool: pool)
            snapshotOutcome = outcome
            if let line { warnings.append(line) }
        }
        if let store { await pool.run { store.close() } }
        var report = RunReport(command: command, manifest: plan.manifest.path, started: started, finished: Date(), items: results)
        report.run = identity
        report.warnings = plan.manifest.listWarnings + listWarnings.value + warnings + run.warnings.value
        report.hosts = Self.hostSummaries(engine.hostSnapshot())
        report.snapshot = snapshotOutcome
        report.setSnapshots = sets.outcomes
        return report
    }

    /// The run's identity for its report (docs/reports.md#the-run): the digest is of the manifest
    /// file's bytes as they are when the run starts, before any filter, so shards of
    /// one manifest agree and an edit between shards shows.
    static func identity(of plan: Plan) -> RunIdentity {
        let bytes = FileManager.default.contents(atPath: plan.manifest.path).map { [UInt8]($0) }
        return RunIdentity(
            manifestSHA256: bytes.flatMap { SHA256.hex(of: $0) }, tags: plan.tags, skipTags: plan.skipTags, shard: plan.shard,
            host: RunIdentity.localHost)
    }

    /// The report's `hosts` section from the engine's host table, by origin.
    static func hostSummaries(_ snapshot: (table: HostTable, now: Double)) -> [HostSummary] {
        snapshot.table.hosts.sorted { $0.key < $1.key }.map { origin, host in
            HostSummary(
                origin: origin, requests: host.requests, bytes: host.bytes, failures: host.failures,
                throttled: host.throttles, coolingS: snapshot.table.coolingTime(of: origin, now: snapshot.now),
                state: snapshot.table.state(of: origin, now: snapshot.now).rawValue)
        }
    }

    /// Opens the state database and reads its records; without a usable one, says
    /// why and the run hashes every present file.
    private static func openState(
        folder: String, busyTimeout: Double, snapshots: [SnapshotTree.Prepared], racyWindowNs: Int64
    ) -> StateOpening.Opened {
        let opening = StateStore.open(folder: folder, busyTimeout: busyTimeout)
        var warnings = opening.warning.map { [$0] } ?? []
        warnings += snapshots.compactMap(\.warning)
        guard let opened = opening.store else { return .none(warnings: warnings) }
        for snapshot in snapshots {
            if let failure = opened.refresh(
                linked: snapshot.linked, pruned: snapshot.pruned, scope: snapshot.scope, racyWindowNs: racyWindowNs)
            {
                warnings.append(failure)
            }
        }
        do {
            return StateOpening.Opened(store: opened, records: try opened.recordTable(), warnings: warnings)
        } catch {
            warnings.append(
                "cannot read state database \(opened.path) (\(error)); not using it this run (every present file is hashed)")
            return .none(warnings: warnings)
        }
    }

    private static func forward(
        _ event: TransferEvent, items: [PlannedItem], to continuation: AsyncStream<SyncEvent>.Continuation
    ) {
        // Checksums files travel under id -1 and are not items.
        switch event {
        case .started(let id, _, _, _) where !items.indices.contains(id): return
        case .progress(let id, _, _, _, _) where !items.indices.contains(id): return
        default: break
        }
        switch event {
        case .started(let id, let length, let connections, let resumedFrom):
            let item = items[id]
            continuation.yield(
                .itemStarted(
                    ItemStart(dest: item.dest, tag: item.tag, length: length, connections: connections, resumedFrom: resumedFrom))
            )
        case .progress(let id, let thisRun, let present, let length, let connections):
            let item = items[id]
            continuation.yield(
                .progress(
                    ItemProgress(
                        dest: item.dest, tag: item.tag, bytesThisRun: thisRun, bytesPresent: present, expected: length,
                        connections: connections)))
        }
    }

    /// Applies the checksums lists through the run's own engine, keeping each list in
    /// the tree's cache (`Plan.applyChecksumLists`).
    private func applyChecksumFiles(to plan: inout Plan, engine: TransferEngine, cacheRoot: String) async throws(SyncError) {
        var cache = ListCache(root: cacheRoot, readOnly: !usesState)
        cache.redact = plan.manifest.defaults.redact ?? []
        cache.durable = options.durable
        let fetcher = try ListFetcher(engine: engine, cache: cache)
        defer { listWarnings.withLock { $0 += fetcher.warnings.value } }
        try await plan.applyChecksumLists(with: fetcher)
    }
}
